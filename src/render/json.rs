//! `--output json`: the report as one JSON document (schema in docs/report.schema.json).

use serde::Serialize;

pub fn render<T: Serialize>(report: &T) -> String {
    // Serializing plain structs of strings and enums cannot fail.
    serde_json::to_string_pretty(report).expect("report serializes") + "\n"
}
