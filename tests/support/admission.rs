//! deploy/admission-policy.yaml's CEL evaluated as the API server evaluates it: its variables in
//! order, then every validation, against one object. cel-interpreter stands in for Kubernetes's
//! cel-go (no API server runs here); the two functions of Kubernetes's CEL libraries the policy
//! uses and the interpreter lacks (`split` and `join`, from cel-go's `ext.Strings`) are added with
//! their documented meaning. An expression that errors denies, as `failurePolicy: Fail` does.
//!
//! Objects reach CEL typed as the API server types them from the OpenAPI schema: a ConfigMap's
//! `binaryData` values (`type: string, format: byte`) are `bytes`, not their base64 text
//! (k8s.io/apiserver `pkg/cel/common/schemas.go`, `SchemaDeclType`: format `byte` → `BytesType`).

use std::collections::HashMap;
use std::sync::Arc;

use cel_interpreter::extractors::This;
use cel_interpreter::objects::{Key, Map};
use cel_interpreter::{Context, ExecutionError, Program, Value as Cel};
use serde::Deserialize;
use serde_json::Value;

/// The pod policy of deploy/admission-policy.yaml, as YAML gives it.
pub fn policy() -> Value {
    policy_named("pullpath-probe-pods")
}

/// The ValidatingAdmissionPolicy named `name` in deploy/admission-policy.yaml.
pub fn policy_named(name: &str) -> Value {
    let text = std::fs::read_to_string(super::repo().join("deploy/admission-policy.yaml"))
        .expect("deploy/admission-policy.yaml");
    documents(&text)
        .into_iter()
        .find(|document| {
            document["kind"] == "ValidatingAdmissionPolicy" && document["metadata"]["name"] == name
        })
        .unwrap_or_else(|| panic!("the ValidatingAdmissionPolicy {name}"))
}

/// `object` as the API server hands it to CEL: JSON, but a ConfigMap's `binaryData` as bytes.
fn typed(object: &Value) -> Cel {
    let mut value = cel_interpreter::to_value(object).expect("JSON is a CEL value");
    if object["kind"] == "ConfigMap"
        && let Some(binary) = object["binaryData"].as_object()
        && let Cel::Map(Map { map }) = &mut value
    {
        use base64::Engine;
        let decoded: HashMap<Key, Cel> = binary
            .iter()
            .map(|(key, text)| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.as_str().unwrap_or_default())
                    .expect("binaryData is base64");
                (
                    Key::String(Arc::new(key.clone())),
                    Cel::Bytes(Arc::new(bytes)),
                )
            })
            .collect();
        Arc::make_mut(map).insert(
            Key::String(Arc::new("binaryData".into())),
            Cel::Map(Map {
                map: Arc::new(decoded),
            }),
        );
    }
    value
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
    let context = context(policy, object);
    failing(policy, &context)
        .map(|(rule, got)| format!("{} → {got:?}", rule["expression"].as_str().unwrap_or("")))
        .collect()
}

/// What the API server answers when `policy` denies `object`: the first failing validation's
/// `messageExpression` (when it evaluates to a string), else its `message`, else the failed
/// expression (`validating/dispatcher.go`, `PolicyDecision.Message`). `None`: admitted.
pub fn denial(policy: &Value, object: &Value) -> Option<String> {
    let context = context(policy, object);
    let (rule, _) = failing(policy, &context).next()?;
    let from_expression = rule["messageExpression"].as_str().and_then(|expression| {
        match Program::compile(expression).ok()?.execute(&context).ok()? {
            Cel::String(message) => Some(message.to_string()),
            _ => None,
        }
    });
    Some(
        from_expression.unwrap_or_else(|| match rule["message"].as_str() {
            Some(message) => message.to_string(),
            None => format!(
                "failed expression: {}",
                rule["expression"].as_str().unwrap_or("")
            ),
        }),
    )
}

/// The policy's variables evaluated in order against `object`, as its validations see them.
fn context(policy: &Value, object: &Value) -> Context<'static> {
    let mut context = Context::default();
    context.add_function("split", split);
    context.add_function("join", join);
    context.add_variable_from_value("object", typed(object));
    let mut variables: HashMap<Key, Cel> = HashMap::new();
    let as_value = |variables: &HashMap<Key, Cel>| {
        Cel::Map(Map {
            map: Arc::new(variables.clone()),
        })
    };
    for variable in policy["spec"]["variables"].as_array().expect("variables") {
        context.add_variable_from_value("variables", as_value(&variables));
        let expression = variable["expression"].as_str().expect("expression");
        let program = Program::compile(expression).expect("the variable compiles");
        // A variable that errors (a field the object lacks) is unusable: the rules that read it
        // fail, which here is a `false` no rule can pass with.
        let value = program.execute(&context).unwrap_or(Cel::Bool(false));
        let name = variable["name"].as_str().expect("name").to_string();
        variables.insert(Key::String(Arc::new(name)), value);
    }
    context.add_variable_from_value("variables", as_value(&variables));
    context
}

/// The validations that do not give `true` in `context`, with what each gave.
fn failing<'a>(
    policy: &'a Value,
    context: &'a Context<'static>,
) -> impl Iterator<Item = (&'a Value, Result<Cel, ExecutionError>)> + 'a {
    policy["spec"]["validations"]
        .as_array()
        .expect("validations")
        .iter()
        .filter_map(move |rule| {
            let expression = rule["expression"].as_str().expect("expression");
            let program = Program::compile(expression).expect("the rule compiles");
            match program.execute(context) {
                Ok(Cel::Bool(true)) => None,
                other => Some((rule, other)),
            }
        })
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
