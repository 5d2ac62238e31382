//! A scratch directory for one test, removed when the test ends (std has none).

use std::path::{Path, PathBuf};

pub struct Scratch(PathBuf);

impl Scratch {
    /// `$TMPDIR/pullpath-NAME-PID`, emptied first.
    pub fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("pullpath-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("scratch directory");
        Scratch(path)
    }

    /// `DIR/pullpath-NAME-PID`, emptied first.
    pub fn under(dir: &Path, name: &str) -> Self {
        let path = dir.join(format!("pullpath-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("scratch directory");
        Scratch(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
