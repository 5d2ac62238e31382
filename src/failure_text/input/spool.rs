//! Input that cannot be read twice (stdin, a pipe) → a file that can: `explain` reads JSON in
//! two passes. The copy lives in the temporary directory, unlinked as soon as it is open, so
//! nothing is left behind whatever happens.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Copy `input` into an unlinked temporary file, positioned at its start.
pub fn spool<R: Read>(mut input: R) -> io::Result<File> {
    let (mut file, path) = create()?;
    std::fs::remove_file(&path)?;
    io::copy(&mut input, &mut file)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

fn create() -> io::Result<(File, PathBuf)> {
    let dir = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut attempt = 0u32;
    loop {
        let path = dir.join(format!(
            "pullpath-input-{}-{nanos}-{attempt}",
            std::process::id()
        ));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}
