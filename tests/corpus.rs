//! `explain` against real failure messages people pasted (tests/fixtures/corpus, a copy of
//! shared/corpus): layer and hop accuracy must each reach 95%. Prints the confusion table.

use std::collections::BTreeMap;

use pullpath::failure_text::explain;
use serde::Deserialize;

#[derive(Deserialize)]
struct Row {
    id: u32,
    text: String,
    layer: String,
    hop: String,
    host: String,
    runtime: String,
}

fn rows() -> Vec<Row> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/corpus/real-pull-failures.jsonl"
    );
    std::fs::read_to_string(path)
        .expect("corpus file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus row"))
        .collect()
}

#[test]
fn corpus_layer_and_hop_accuracy() {
    let rows = rows();
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    let (mut layer_ok, mut hop_ok, mut host_ok, mut runtime_ok) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for row in &rows {
        let explanation = explain(&row.text);
        let verdict = explanation
            .verdict()
            .expect("every corpus row yields a verdict");
        let (layer, hop) = (verdict.layer.to_string(), verdict.hop.to_string());
        *confusion
            .entry((row.layer.clone(), layer.clone()))
            .or_default() += 1;
        layer_ok += usize::from(layer == row.layer);
        hop_ok += usize::from(hop == row.hop);
        host_ok += usize::from(verdict.host.as_deref().unwrap_or("") == row.host);
        runtime_ok += usize::from(verdict.runtime.as_str() == row.runtime);
        if layer != row.layer || hop != row.hop {
            misses.push(format!(
                "#{} want {}/{} got {}/{}: {}",
                row.id,
                row.layer,
                row.hop,
                layer,
                hop,
                &row.text.chars().take(160).collect::<String>()
            ));
        }
    }
    let n = rows.len();
    println!("expected -> predicted: count");
    for ((want, got), count) in &confusion {
        let mark = if want == got { " " } else { "!" };
        println!("{mark} {want:>10} -> {got:<10} {count}");
    }
    println!(
        "layer {layer_ok}/{n}, hop {hop_ok}/{n}, host {host_ok}/{n}, runtime {runtime_ok}/{n}"
    );
    for miss in &misses {
        println!("{miss}");
    }
    assert!(
        layer_ok * 100 >= n * 95,
        "layer accuracy {layer_ok}/{n} below 95%"
    );
    assert!(
        hop_ok * 100 >= n * 95,
        "hop accuracy {hop_ok}/{n} below 95%"
    );
}
