//! The link step's code order (build.rs, `link/probe-code.ld`): the functions a probe runs sit
//! in the binary's `.text.probe` section, the cluster commands' code outside it. Read from the
//! `pullpath` binary cargo built for these tests, with the `object` crate.
#![cfg(target_os = "linux")]

use object::{Object, ObjectSection, ObjectSymbol};

/// The `pullpath` binary's `.text.probe` address range and its function symbols.
fn layout() -> (std::ops::Range<u64>, Vec<(String, u64)>) {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_pullpath")).expect("read the pullpath binary");
    let file = object::File::parse(&*bytes).expect("pullpath is an object file");
    let section = file
        .section_by_name(".text.probe")
        .expect("a .text.probe section: build.rs passed link/probe-code.ld to the linker");
    let range = section.address()..section.address() + section.size();
    let functions = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text)
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
        .collect();
    (range, functions)
}

#[test]
fn the_code_a_probe_runs_is_in_its_own_section_and_fleet_code_is_not() {
    if option_env!("PULLPATH_NO_CODE_ORDER").is_some_and(|v| v != "0") {
        eprintln!("skipped: built with PULLPATH_NO_CODE_ORDER");
        return;
    }
    let (probe_section, functions) = layout();
    let placed = |prefix: &str| -> (usize, usize) {
        let matching: Vec<u64> = functions
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, address)| *address)
            .collect();
        let inside = matching
            .iter()
            .filter(|a| probe_section.contains(a))
            .count();
        (inside, matching.len())
    };

    // The probe's sequencer and its pull walk: run by every probe.
    for probe_code in ["_ZN8pullpath5probe3run", "_ZN8pullpath5probe4walk"] {
        let (inside, all) = placed(probe_code);
        assert!(all > 0, "no symbol {probe_code}… in the binary (stripped?)");
        assert!(
            inside > 0,
            "none of the {all} {probe_code}… functions is in .text.probe"
        );
    }
    // fleet's own functions: a probe never runs them, so they stay in .text.
    let (inside, all) = placed("_ZN8pullpath5fleet");
    assert!(all > 0, "no fleet function in the binary");
    assert_eq!(
        inside, 0,
        "{inside} of {all} fleet functions were placed with the probe's"
    );
}
