//! `pullpath azure commands`: the read-only `az` commands that write the export directory,
//! as one bash script. pullpath never calls Azure; the user runs this where `az` is logged in.

use super::exports::Export;

/// What the script needs to know.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub cluster: &'a str,
    pub resource_group: &'a str,
    pub registry: &'a str,
    pub out: &'a str,
}

/// A value as one single-quoted shell word.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// The script: every command of [`Export`], in the layout's order, with per-zone and per-NIC
/// loops. Commands that may legitimately fail (no gateways, a NIC Azure cannot report on)
/// leave an empty list or no file, which the analysis names.
pub fn script(target: &Target) -> String {
    let mut lines = vec![
        "#!/usr/bin/env bash".to_string(),
        "# Read-only exports for `pullpath azure analyse` (layout: docs/azure.md).".into(),
        "# Run where `az` is logged in to the subscription of the cluster, its VNets and the registry;".into(),
        "# every command is a show or a list: nothing here changes Azure.".into(),
        "set -uo pipefail".into(),
        format!("CLUSTER={}", quote(target.cluster)),
        format!("RG={}", quote(target.resource_group)),
        format!("ACR={}", quote(target.registry)),
        format!("OUT={}", quote(target.out)),
        "mkdir -p \"$OUT/private-dns-links\" \"$OUT/private-dns-records\" \"$OUT/effective-routes\" \"$OUT/effective-nsg\"".into(),
        String::new(),
    ];
    for export in Export::ALL {
        match export {
            Export::PrivateDnsLinks
            | Export::PrivateDnsRecords
            | Export::EffectiveRoutes
            | Export::EffectiveNsg
            | Export::Endpoints => {}
            Export::VnetGateways | Export::LocalGateways => {
                let file = export.file();
                lines.push(format!(
                    "# {file}: an empty list when the subscription has none"
                ));
                lines.push(format!(
                    "{} || echo '[]' > \"$OUT/{file}\"",
                    export.command()
                ));
            }
            _ => lines.push(export.command().to_string()),
        }
        if export == Export::PrivateDnsZones {
            lines.push(String::new());
            lines.push("# One file per zone: its VNet links and its A records.".into());
            lines.push(
                "az network private-dns zone list --query \"[].[resourceGroup, name]\" -o tsv |"
                    .into(),
            );
            lines.push("while read -r ZONE_RG ZONE_NAME; do".into());
            lines.push(format!("  {}", Export::PrivateDnsLinks.command()));
            lines.push(format!("  {}", Export::PrivateDnsRecords.command()));
            lines.push("done".into());
            lines.push(String::new());
        }
    }
    lines.extend([
        String::new(),
        "# Effective routes and NSGs of one node NIC per scale set. Azure produces them only for the NIC".into(),
        "# of a running VM, and not for every scale-set NIC; without them pullpath rebuilds the routes".into(),
        "# from route tables, peerings and gateways, and says so.".into(),
        "NODE_RG=$(az aks show -g \"$RG\" -n \"$CLUSTER\" --query nodeResourceGroup -o tsv)".into(),
        "for VMSS in $(az vmss list -g \"$NODE_RG\" --query \"[].name\" -o tsv); do".into(),
        "  NIC=\"$VMSS\"".into(),
        "  NIC_ID=$(az vmss nic list -g \"$NODE_RG\" --vmss-name \"$VMSS\" --query \"[0].id\" -o tsv)".into(),
        format!(
            "  {} || {{ rm -f \"$OUT/effective-routes/$NIC.json\"; echo \"no effective routes for $VMSS\" >&2; }}",
            Export::EffectiveRoutes.command()
        ),
        format!(
            "  {} || {{ rm -f \"$OUT/effective-nsg/$NIC.json\"; echo \"no effective NSGs for $VMSS\" >&2; }}",
            Export::EffectiveNsg.command()
        ),
        "done".into(),
        String::new(),
        "# Endpoints outside Azure the pull also touches (an on-premises registry or mirror) go in".into(),
        "# $OUT/endpoints.json by hand: [{\"host\": \"mirror.corp.example\", \"address\": \"192.168.20.10\"}]".into(),
        "echo \"exports written to $OUT; next: pullpath azure analyse $OUT\"".into(),
    ]);
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_writes_every_file_of_the_layout_and_quotes_its_inputs() {
        let text = script(&Target {
            cluster: "aks-prod",
            resource_group: "rg-aks",
            registry: "contosoreg",
            out: "it's here",
        });
        for export in Export::ALL {
            let file = export
                .file()
                .replace("<zone>", "$ZONE_NAME")
                .replace("<nic>", "$NIC");
            assert!(
                text.contains(&file) || export == Export::Endpoints,
                "{file}"
            );
        }
        assert!(text.contains(r"OUT='it'\''s here'"));
        for verb in [" create ", " update ", " delete ", " set "] {
            assert!(!text.contains(verb), "{verb}");
        }
    }
}
