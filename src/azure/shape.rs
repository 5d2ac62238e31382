//! Reading one JSON export whatever its shape: `az` prints resources flattened, camelCase, with
//! `resourceGroup` added; the ARM/REST API nests the same fields under `properties` and wraps
//! lists in `{"value": [...]}`. Keys, ids and enum values are compared without regard to case
//! ("Always perform a case-insensitive comparison of names", MicrosoftDocs/azure-docs
//! `articles/azure-resource-manager/management/resource-name-rules.md`; `az aks show` prints
//! `vnetSubnetId` where ARM templates write `vnetSubnetID`).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// A field of a resource: the top level first (`az`), then `properties` (ARM), keys matched
/// without regard to case.
pub fn get<'a>(resource: &'a Value, key: &str) -> Option<&'a Value> {
    let object = resource.as_object()?;
    let top = object
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
        .filter(|v| !v.is_null());
    top.or_else(|| {
        object
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("properties"))
            .and_then(|(_, p)| get(p, key))
    })
}

/// A field along a path of keys, each looked up as [`get`] does.
pub fn path<'a>(resource: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(resource, |v, k| get(v, k))
}

pub fn text<'a>(resource: &'a Value, key: &str) -> Option<&'a str> {
    get(resource, key).and_then(Value::as_str)
}

/// A boolean field; `az` sometimes prints booleans as strings.
pub fn flag(resource: &Value, key: &str) -> Option<bool> {
    match get(resource, key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The items of an array field (empty when absent or not an array).
pub fn items<'a>(resource: &'a Value, key: &str) -> &'a [Value] {
    get(resource, key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Strings of an array field (`addressPrefixes`, `dnsServers`, `ipAddresses`).
pub fn strings(resource: &Value, key: &str) -> Vec<String> {
    items(resource, key)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// A string or a list of strings (`addressPrefix` is a string on routes and a list on
/// effective routes).
pub fn one_or_many(resource: &Value, key: &str) -> Vec<String> {
    match get(resource, key) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(_)) => strings(resource, key),
        _ => Vec::new(),
    }
}

/// A reference to another resource: `{"id": "..."}` or the id as a plain string.
pub fn reference(resource: &Value, key: &str) -> Option<ResourceId> {
    match get(resource, key)? {
        Value::String(s) => Some(ResourceId::new(s)),
        v => text(v, "id").map(ResourceId::new),
    }
}

/// The entries of a list export: a JSON array (`az … list`), `{"value": [...]}` (REST list), or
/// a single object (`az … show --ids` with one id).
pub fn entries(document: &Value) -> &[Value] {
    match document {
        Value::Array(a) => a,
        Value::Object(_) => match get(document, "value").and_then(Value::as_array) {
            Some(a) => a,
            None => std::slice::from_ref(document),
        },
        _ => &[],
    }
}

/// Enum values compared the way Azure compares them (`VNetPeering` = `VnetPeering`).
pub fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// An Azure resource id, compared and hashed without regard to case or a trailing slash, and
/// printed as it was exported.
#[derive(Debug, Clone)]
pub struct ResourceId(String);

impl ResourceId {
    pub fn new(id: &str) -> ResourceId {
        ResourceId(id.trim().trim_end_matches('/').to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment: the resource's own name.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// The value after a segment such as `resourceGroups` or `virtualNetworks`.
    pub fn segment(&self, key: &str) -> Option<&str> {
        let mut parts = self.0.split('/');
        parts.find(|p| p.eq_ignore_ascii_case(key))?;
        parts.next().filter(|p| !p.is_empty())
    }

    pub fn resource_group(&self) -> Option<&str> {
        self.segment("resourceGroups")
    }

    /// The id cut after `key/<name>`: a subnet's VNet, a rule's NSG.
    pub fn parent(&self, key: &str) -> Option<ResourceId> {
        let parts: Vec<&str> = self.0.split('/').collect();
        let at = parts.iter().position(|p| p.eq_ignore_ascii_case(key))?;
        (at + 1 < parts.len()).then(|| ResourceId(parts[..=at + 1].join("/")))
    }
}

impl PartialEq for ResourceId {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl Eq for ResourceId {}

impl Hash for ResourceId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_ascii_lowercase().hash(state);
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_found_flat_or_under_properties_in_any_case() {
        let az = json!({"vnetSubnetId": "/x", "peeringState": "Connected"});
        let arm =
            json!({"name": "p", "properties": {"vnetSubnetID": "/x", "peeringState": "connected"}});
        assert_eq!(text(&az, "vnetSubnetID"), Some("/x"));
        assert_eq!(text(&arm, "vnetSubnetId"), Some("/x"));
        assert!(same(text(&arm, "peeringState").unwrap_or(""), "Connected"));
        assert_eq!(text(&arm, "name"), Some("p"));
    }

    #[test]
    fn null_at_the_top_falls_back_to_properties() {
        let v = json!({"routeTable": null, "properties": {"routeTable": {"id": "/rt"}}});
        assert_eq!(reference(&v, "routeTable"), Some(ResourceId::new("/RT")));
    }

    #[test]
    fn lists_come_in_three_shapes() {
        assert_eq!(entries(&json!([1, 2])).len(), 2);
        assert_eq!(entries(&json!({"value": [1, 2, 3]})).len(), 3);
        assert_eq!(entries(&json!({"name": "one"})).len(), 1);
        assert!(entries(&json!("text")).is_empty());
    }

    #[test]
    fn resource_ids_compare_without_case() {
        let a = ResourceId::new(
            "/subscriptions/s/resourcegroups/RG/providers/Microsoft.Network/virtualNetworks/Hub/subnets/a/",
        );
        let b = ResourceId::new(
            "/subscriptions/s/resourceGroups/rg/providers/microsoft.network/virtualnetworks/hub/subnets/A",
        );
        assert_eq!(a, b);
        assert_eq!(a.resource_group(), Some("RG"));
        assert_eq!(a.name(), "a");
        assert_eq!(a.parent("virtualNetworks"), b.parent("virtualnetworks"));
        assert_eq!(
            a.parent("virtualNetworks").map(|p| p.name().to_string()),
            Some("Hub".into())
        );
        let mut set = std::collections::HashSet::new();
        set.insert(a);
        assert!(set.contains(&b));
    }
}
