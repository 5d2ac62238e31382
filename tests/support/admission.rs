//! deploy/admission-policy.yaml's CEL evaluated as the API server evaluates it: its variables in
//! order, then every validation, against one object. cel-interpreter stands in for Kubernetes's
//! cel-go (no API server runs here); the two functions of Kubernetes's CEL libraries the policy
//! uses and the interpreter lacks (`split` and `join`, from cel-go's `ext.Strings`) are added with
//! their documented meaning. An expression that errors denies, as `failurePolicy: Fail` does.

use std::sync::Arc;

use cel_interpreter::extractors::This;
use cel_interpreter::{Context, ExecutionError, Program, Value as Cel};
use serde::Deserialize;
use serde_json::Value;

/// The policy document of deploy/admission-policy.yaml, as YAML gives it.
pub fn policy() -> Value {
    let text = std::fs::read_to_string(super::repo().join("deploy/admission-policy.yaml"))
        .expect("deploy/admission-policy.yaml");
    documents(&text)
        .into_iter()
        .find(|document| document["kind"] == "ValidatingAdmissionPolicy")
        .expect("the ValidatingAdmissionPolicy")
}

/// Every YAML document of `text` (a manifest file, or what a script printed), empty ones left out.
pub fn documents(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).expect("a YAML document"))
        .filter(|document| !document.is_null())
        .collect()
}

/// The validations `object` fails (each as its expression and what it gave): empty when the
/// policy admits it.
pub fn refusals(policy: &Value, object: &Value) -> Vec<String> {
    let mut context = Context::default();
    context.add_function("split", split);
    context.add_function("join", join);
    context.add_variable("object", object).expect("object");
    let mut variables = serde_json::Map::new();
    for variable in policy["spec"]["variables"].as_array().expect("variables") {
        context
            .add_variable("variables", &variables)
            .expect("variables");
        let expression = variable["expression"].as_str().expect("expression");
        let program = Program::compile(expression).expect("the variable compiles");
        // A variable that errors (a field the object lacks) is unusable: the rules that read it
        // fail, which here is a `false` no rule can pass with.
        let value = program
            .execute(&context)
            .ok()
            .and_then(|v| v.json().ok())
            .unwrap_or(Value::Bool(false));
        variables.insert(variable["name"].as_str().expect("name").to_string(), value);
    }
    context
        .add_variable("variables", &variables)
        .expect("variables");
    policy["spec"]["validations"]
        .as_array()
        .expect("validations")
        .iter()
        .filter_map(|rule| {
            let expression = rule["expression"].as_str().expect("expression");
            let program = Program::compile(expression).expect("the rule compiles");
            match program.execute(&context) {
                Ok(Cel::Bool(true)) => None,
                other => Some(format!("{expression} → {other:?}")),
            }
        })
        .collect()
}

/// `ext.Strings` `split`: `'a,b'.split(',')` → `['a', 'b']`.
fn split(This(this): This<Arc<String>>, separator: Arc<String>) -> Result<Cel, ExecutionError> {
    Ok(Cel::List(Arc::new(
        this.split(separator.as_str())
            .map(|part| Cel::String(Arc::new(part.to_string())))
            .collect(),
    )))
}

/// `ext.Strings` `join`: `['a', 'b'].join(' ')` → `'a b'`; a list holding a non-string errors.
fn join(This(this): This<Arc<Vec<Cel>>>, separator: Arc<String>) -> Result<Cel, ExecutionError> {
    let parts: Option<Vec<&str>> = this
        .iter()
        .map(|part| match part {
            Cel::String(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let parts = parts.ok_or_else(|| ExecutionError::function_error("join", "not a string"))?;
    Ok(Cel::String(Arc::new(parts.join(separator.as_str()))))
}
