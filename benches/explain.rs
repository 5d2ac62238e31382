//! `cargo bench --bench explain`: classify a large runtime log, and read a cluster's events
//! (`kubectl get events -A -o json`: 120,000 and one million, issue 30) as `explain` reads a
//! file: time, MB/s and peak RSS. `PULLPATH_BENCH_QUICK=1` runs small sizes (CI proves it works
//! without judging speed).
//!
//! The events are generated into a temporary file first (tests/support/event_list.rs, never
//! held whole), then read in this process as `pullpath explain -f FILE -o json` reads them:
//! `input::read` → `explain_each` → the findings report → its JSON. Peak RSS is the kernel's
//! high-water mark (`VmHWM`), reset before each run (`/proc/self/clear_refs`), so it is the
//! reading's own; where the reset is refused it is the process's peak so far, and says so.

#[path = "../tests/support/event_list.rs"]
mod event_list;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use pullpath::failure_text::{self, input};
use pullpath::report::findings;

fn main() {
    let quick = std::env::var_os("PULLPATH_BENCH_QUICK").is_some();
    log(if quick { 10_000 } else { 200_000 });
    println!();
    println!(
        "| input | events | first timestamps over | MB | findings | seconds | MB/s | peak RSS MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // (events, seconds their first timestamps spread over): an hour, as events live; 200,000
    // distinct times (as many as a million events' scheduler `eventTime`s), still counted in
    // the first pass; and every time its own, placed by a third pass (see `input::objects`).
    let sizes: &[(usize, usize)] = if quick {
        &[(2_000, 3600), (2_000, 2_000)]
    } else {
        &[
            (120_000, 3600),
            (1_000_000, 3600),
            (1_000_000, 200_000),
            (1_000_000, 1_000_000),
        ]
    };
    for &(events, seconds) in sizes {
        events_file("events JSON", seconds, |out| {
            event_list::write_events(out, events, seconds)
        });
    }
    // A registry outage over 5,000 pods (issue 45): every pod fails, its four messages repeated.
    let outages: &[usize] = if quick {
        &[20_000]
    } else {
        &[200_000, 1_000_000]
    };
    for &events in outages {
        events_file("outage, 5000 pods", 3600, |out| {
            event_list::write_outage(out, events, OUTAGE_PODS, 3600)
        });
    }
}

/// Pods failing in the outage rows: AKS's node limit per cluster, a pod each.
const OUTAGE_PODS: usize = 5_000;

/// A runtime log: mostly noise, a failure every tenth line, as a busy node's journal looks.
fn log(lines: usize) {
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/corpus/real-pull-failures.jsonl"
    ))
    .expect("corpus");
    let messages: Vec<String> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(|t| t.replace('\n', " ")))
        .collect();
    let mut log = String::new();
    for i in 0..lines {
        if i % 10 == 0 {
            log.push_str(&messages[i / 10 % messages.len()]);
        } else {
            log.push_str("time=\"2026-12-02T10:00:00Z\" level=info msg=\"PullImage progress\" image=registry.example.test/app:v1 bytes=1048576");
        }
        log.push('\n');
    }
    let bytes = log.len();
    let started = Instant::now();
    let explanation = failure_text::explain(&log);
    let elapsed = started.elapsed().as_secs_f64();
    let verdict = explanation
        .verdict()
        .map(|d| d.layer.to_string())
        .unwrap_or_default();
    println!("| input | lines | MB | messages | seconds | lines/s | MB/s |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| event log | {lines} | {:.1} | {} | {elapsed:.3} | {:.0} | {:.1} |",
        bytes as f64 / 1e6,
        explanation.messages.len(),
        lines as f64 / elapsed,
        bytes as f64 / 1e6 / elapsed
    );
    println!("verdict: {verdict}");
}

/// The events `write` generates, in a file, read as `explain -f FILE -o json` reads them.
fn events_file(
    label: &str,
    seconds: usize,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<event_list::Generated>,
) {
    let dir = std::env::temp_dir().join(format!("pullpath-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("events.json");
    let made = {
        let mut out = BufWriter::new(File::create(&path).expect("bench file"));
        let made = write(&mut out).expect("generated");
        out.flush().expect("written");
        made
    };
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let started = Instant::now();
    let found = input::read(File::open(&path).expect("bench file"), &input::LIMITS)
        .expect("the events read");
    let explained: Vec<_> = failure_text::explain_each_counted(found.messages, &found.not_listed)
        .into_iter()
        .map(|e| (e, findings::FindingInput::default()))
        .collect();
    let report = findings::findings_report("explain", &explained, None, Vec::new());
    let json = pullpath::render::json::render(&report);
    let elapsed = started.elapsed().as_secs_f64();
    let peak = peak_rss_mib();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        explained.len(),
        made.failing.iter().sum::<usize>(),
        "one finding per failing pod"
    );
    std::hint::black_box(json);
    let mb = made.bytes as f64 / 1e6;
    println!(
        "| {label} | {} | {seconds} s | {mb:.1} | {} | {elapsed:.3} | {:.1} | {}{} |",
        made.events,
        explained.len(),
        mb / elapsed,
        peak.map_or("?".to_string(), |p| format!("{p:.1}")),
        if reset { "" } else { " (process peak)" }
    );
}

/// The process's peak resident set (`VmHWM`), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
