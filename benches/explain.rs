//! `cargo bench --bench explain`: classify a large event log and report lines per second.
//! `PULLPATH_BENCH_QUICK=1` runs a small size (CI proves it works without judging speed).

use std::time::Instant;

fn main() {
    let quick = std::env::var_os("PULLPATH_BENCH_QUICK").is_some();
    let lines = if quick { 10_000 } else { 200_000 };
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
    // A runtime log: mostly noise, a failure every tenth line, as a busy node's journal looks.
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
    let explanation = pullpath::failure_text::explain(&log);
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
