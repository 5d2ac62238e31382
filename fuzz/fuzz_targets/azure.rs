//! `cargo +nightly fuzz run azure`: any export directory (`Exports::from_texts`, the same
//! reading as `Exports::load`) typed (`Network::from_exports`), analysed and reported, as
//! `pullpath azure analyse` does. Input: files, each `path\n` then its text, separated by
//! `0xFF` (`fuzz/corpus/azure/` holds fixture directories in that form).
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullpath::azure::{analyse, exports::Exports, model::Network, wire};

fuzz_target!(|data: &[u8]| {
    let mut texts = BTreeMap::new();
    for file in data.split(|b| *b == pullpath_fuzz::SEPARATOR) {
        let (path, text) = match file.iter().position(|b| *b == b'\n') {
            Some(at) => (&file[..at], &file[at + 1..]),
            None => (file, &b""[..]),
        };
        texts.insert(String::from_utf8_lossy(path).into_owned(), text.to_vec());
    }
    let exports = Exports::from_texts(Path::new("/fuzz"), &texts);
    let network = Network::from_exports(&exports);
    let analysis = analyse::analyse(&network, &exports, None);
    let _ = wire::report(&analysis, &exports);
});
