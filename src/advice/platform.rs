//! The registry's platform, read from its host, and that platform's own next steps: Azure
//! Container Registry (`az aks check-acr`, `az acr check-health --vnet`, the kubelet identity's
//! `AcrPull`, the private DNS zone's VNet link), Amazon ECR (its VPC endpoints, the node role),
//! Google Artifact Registry and Container Registry, GitHub's and Docker Hub's. Commands are filled
//! with the names the text gives (registry, region, project, repository, namespace); an upper-case
//! word stands for what it does not (`CLUSTER`, `RG`, `VNET`).
//!
//! Sources: `az aks check-acr` and `az acr check-health` (Azure CLI reference), the ACR private
//! link article (zone `privatelink.azurecr.io`), ECR's interface endpoints (`ecr.api`, `ecr.dkr`,
//! and the S3 gateway endpoint its layers need: AWS ECR user guide, "VPC endpoints"), Artifact
//! Registry's `roles/artifactregistry.reader`, GitHub Packages' `read:packages`, Docker Hub's
//! rate-limit check against `ratelimitpreview/test` (docs.docker.com, "Docker Hub usage and
//! limits").

use crate::vocab::Layer;

/// A registry platform with next steps of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Platform {
    /// `NAME.azurecr.io` and its data endpoints `NAME.REGION.data.azurecr.io`.
    Acr {
        registry: String,
    },
    /// `ACCOUNT.dkr.ecr.REGION.amazonaws.com`.
    Ecr {
        account: String,
        region: String,
    },
    /// `LOCATION-docker.pkg.dev`.
    ArtifactRegistry {
        location: String,
    },
    /// `gcr.io` and its regional hosts, served from Artifact Registry since Container Registry's
    /// shutdown.
    Gcr,
    Ghcr,
    DockerHub,
}

impl Platform {
    /// The platform of `host` (`host[:port]`, any case); `None` for any other registry.
    pub fn of(host: &str) -> Option<Platform> {
        let name = host
            .rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(host, |(name, _)| name)
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if let Some(rest) = name.strip_suffix(".azurecr.io") {
            let registry = rest.split('.').next().unwrap_or_default();
            return (!registry.is_empty()).then(|| Platform::Acr {
                registry: registry.to_string(),
            });
        }
        let labels: Vec<&str> = name.split('.').collect();
        if let [account, "dkr", "ecr", region, "amazonaws", "com" | "com.cn"] = labels.as_slice() {
            return Some(Platform::Ecr {
                account: (*account).to_string(),
                region: (*region).to_string(),
            });
        }
        if let Some(location) = name.strip_suffix("-docker.pkg.dev")
            && !location.contains('.')
        {
            return Some(Platform::ArtifactRegistry {
                location: location.to_string(),
            });
        }
        match name.as_str() {
            "gcr.io" | "us.gcr.io" | "eu.gcr.io" | "asia.gcr.io" => Some(Platform::Gcr),
            "ghcr.io" | "pkg-containers.githubusercontent.com" => Some(Platform::Ghcr),
            "docker.io"
            | "index.docker.io"
            | "registry-1.docker.io"
            | "auth.docker.io"
            | "production.cloudflare.docker.com" => Some(Platform::DockerHub),
            _ => None,
        }
    }
}

/// What a platform's steps are for: the path to it, the identity it checks, or its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concern {
    Network,
    Identity,
    Limit,
}

impl Concern {
    /// The concern of a failure at `layer` (`mechanism` for the blob hop); `refused_by_address`
    /// when the registry's network rules refused the node (a 403 that is the network's).
    pub fn of(layer: Layer, mechanism: Option<Layer>, refused_by_address: bool) -> Option<Concern> {
        if refused_by_address {
            return Some(Concern::Network);
        }
        match mechanism.filter(|_| layer == Layer::Blob).unwrap_or(layer) {
            Layer::Dns | Layer::Route | Layer::Refused | Layer::Tls | Layer::Proxy => {
                Some(Concern::Network)
            }
            Layer::Auth | Layer::Forbidden | Layer::NotFound => Some(Concern::Identity),
            Layer::RateLimit => Some(Concern::Limit),
            _ => None,
        }
    }
}

/// The names the text gives for filling commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// The image's repository path (`team/app`), without registry, tag or digest.
    pub repository: Option<String>,
    /// The pod's namespace.
    pub namespace: Option<String>,
}

/// The platform's next steps for `concern`, as commands with a comment each.
pub fn next_steps(platform: &Platform, concern: Concern, names: &Names) -> Vec<String> {
    let ns = names.namespace.as_deref().unwrap_or("NAMESPACE");
    let repo = names.repository.as_deref().unwrap_or("REPOSITORY");
    match (platform, concern) {
        (Platform::Acr { registry }, concern) => acr(registry, concern),
        (Platform::Ecr { account, region }, Concern::Network) => vec![format!(
            "aws ec2 describe-vpc-endpoints --region {region} --filters Name=vpc-id,Values=VPC_ID --query 'VpcEndpoints[].[ServiceName,VpcEndpointType,State,PrivateDnsEnabled]' --output table   # nodes without a NAT need com.amazonaws.{region}.ecr.api, com.amazonaws.{region}.ecr.dkr (private DNS on) and the com.amazonaws.{region}.s3 gateway in the nodes' route tables: {account}'s layers come from S3"
        )],
        (Platform::Ecr { account, region }, Concern::Identity) => vec![
            "aws iam list-attached-role-policies --role-name NODE_ROLE   # the node role needs AmazonEC2ContainerRegistryReadOnly (or AmazonEC2ContainerRegistryPullOnly)".to_string(),
            format!(
                "aws ecr get-repository-policy --registry-id {account} --region {region} --repository-name {repo}   # a pull from another account also needs the repository's policy to allow it"
            ),
        ],
        (Platform::ArtifactRegistry { location }, Concern::Identity) => {
            let (project, repository) = gar_path(names.repository.as_deref());
            vec![format!(
                "gcloud artifacts repositories get-iam-policy {repository} --location {location} --project {project}   # the node's service account needs roles/artifactregistry.reader"
            )]
        }
        (Platform::ArtifactRegistry { location }, Concern::Network) => vec![format!(
            "gcloud compute networks subnets describe SUBNET --region {location} --format='get(privateIpGoogleAccess)'   # nodes without external addresses reach {location}-docker.pkg.dev only with Private Google Access"
        )],
        (Platform::Gcr, Concern::Identity | Concern::Network) => vec![
            "gcloud artifacts repositories list --project PROJECT   # Container Registry is shut down: gcr.io is served from Artifact Registry, whose reader role (roles/artifactregistry.reader) the node's service account needs".to_string(),
        ],
        (Platform::Ghcr, Concern::Identity) => vec![format!(
            "kubectl create secret docker-registry ghcr-pull -n {ns} --docker-server=ghcr.io --docker-username=USER --docker-password=TOKEN   # a token with read:packages, then imagePullSecrets: [ghcr-pull]; or make the package public"
        )],
        (Platform::Ghcr, Concern::Network) => vec![
            "curl -sI https://ghcr.io/v2/ https://pkg-containers.githubusercontent.com/   # from the node: layers come from pkg-containers.githubusercontent.com, which the egress must allow besides ghcr.io".to_string(),
        ],
        (Platform::DockerHub, Concern::Limit) => vec![
            "TOKEN=$(curl -s 'https://auth.docker.io/token?service=registry.docker.io&scope=repository:ratelimitpreview/test:pull' | jq -r .token); curl -sI -H \"Authorization: Bearer $TOKEN\" https://registry-1.docker.io/v2/ratelimitpreview/test/manifests/latest | grep -i ratelimit   # from the node: its address's remaining pulls".to_string(),
            format!(
                "kubectl create secret docker-registry dockerhub -n {ns} --docker-server=https://index.docker.io/v1/ --docker-username=USER --docker-password=TOKEN   # authenticated pulls count against the account, not the node's address"
            ),
        ],
        (Platform::DockerHub, Concern::Network) => vec![
            "curl -sI https://registry-1.docker.io/v2/ https://production.cloudflare.docker.com/   # from the node: layers come from production.cloudflare.docker.com, which the egress must allow besides the registry".to_string(),
        ],
        _ => Vec::new(),
    }
}

fn acr(registry: &str, concern: Concern) -> Vec<String> {
    let mut steps = vec![format!(
        "az aks check-acr --name CLUSTER --resource-group RG --acr {registry}.azurecr.io   # from a node: DNS, reach and the kubelet identity's pull right"
    )];
    let scope = format!("$(az acr show --name {registry} --query id -o tsv)");
    match concern {
        Concern::Network => steps.extend([
            format!(
                "az acr check-health --name {registry} --vnet VNET --yes   # DNS and reach of the login server and data endpoints from the nodes' VNet"
            ),
            "az network private-dns link vnet list --resource-group RG --zone-name privatelink.azurecr.io -o table   # the zone must be linked to the nodes' VNet".to_string(),
            "az network private-dns link vnet create --resource-group RG --zone-name privatelink.azurecr.io --name LINK --virtual-network VNET_ID --registration-enabled false   # when the link is missing".to_string(),
            format!(
                "az acr show --name {registry} --query '{{publicNetworkAccess:publicNetworkAccess, defaultAction:networkRuleSet.defaultAction, ipRules:networkRuleSet.ipRules}}'   # the registry's network rules"
            ),
        ]),
        Concern::Identity => steps.extend([
            "az aks show --name CLUSTER --resource-group RG --query identityProfile.kubeletidentity.objectId -o tsv   # the kubelet identity (OBJECT_ID)".to_string(),
            format!("az role assignment list --assignee OBJECT_ID --scope {scope} -o table   # AcrPull must be among them"),
            format!(
                "az role assignment create --assignee-object-id OBJECT_ID --assignee-principal-type ServicePrincipal --role AcrPull --scope {scope}   # or az aks update --name CLUSTER --resource-group RG --attach-acr {registry}"
            ),
        ]),
        Concern::Limit => {}
    }
    steps
}

/// `PROJECT/REPOSITORY/IMAGE` → (`PROJECT`, `REPOSITORY`), placeholders where the path is short.
fn gar_path(path: Option<&str>) -> (String, String) {
    let mut parts = path.unwrap_or_default().split('/');
    let project = parts.next().filter(|p| !p.is_empty()).unwrap_or("PROJECT");
    let repository = parts
        .next()
        .filter(|p| !p.is_empty())
        .unwrap_or("REPOSITORY");
    (project.to_string(), repository.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_comes_from_the_host() {
        assert_eq!(
            Platform::of("Contoso.AzureCR.io:443"),
            Some(Platform::Acr {
                registry: "contoso".into()
            })
        );
        assert_eq!(
            Platform::of("contoso.westeurope.data.azurecr.io"),
            Some(Platform::Acr {
                registry: "contoso".into()
            })
        );
        assert_eq!(
            Platform::of("123456789012.dkr.ecr.eu-west-1.amazonaws.com"),
            Some(Platform::Ecr {
                account: "123456789012".into(),
                region: "eu-west-1".into()
            })
        );
        assert_eq!(
            Platform::of("europe-west4-docker.pkg.dev"),
            Some(Platform::ArtifactRegistry {
                location: "europe-west4".into()
            })
        );
        assert_eq!(
            Platform::of("registry-1.docker.io"),
            Some(Platform::DockerHub)
        );
        assert_eq!(Platform::of("ghcr.io"), Some(Platform::Ghcr));
        assert_eq!(Platform::of("azurecr.io.evil.example"), None);
        assert_eq!(Platform::of("registry.example.com"), None);
    }

    #[test]
    fn acr_steps_name_the_registry_and_the_concern() {
        let acr = Platform::of("contoso.azurecr.io").expect("acr");
        let network = next_steps(&acr, Concern::Network, &Names::default()).join("\n");
        assert!(network.contains(
            "az aks check-acr --name CLUSTER --resource-group RG --acr contoso.azurecr.io"
        ));
        assert!(network.contains("az acr check-health --name contoso --vnet VNET"));
        assert!(network.contains("privatelink.azurecr.io"));
        let identity = next_steps(&acr, Concern::Identity, &Names::default()).join("\n");
        assert!(identity.contains("--role AcrPull") && identity.contains("kubeletidentity"));
        assert!(!identity.contains("check-health"));
    }

    #[test]
    fn other_platforms_fill_what_the_text_gives() {
        let names = Names {
            repository: Some("my-proj/team-repo/app".into()),
            namespace: Some("shop".into()),
        };
        let gar = Platform::of("us-central1-docker.pkg.dev").expect("gar");
        assert!(
            next_steps(&gar, Concern::Identity, &names)[0]
                .contains("get-iam-policy team-repo --location us-central1 --project my-proj")
        );
        let ecr = Platform::of("1.dkr.ecr.us-east-1.amazonaws.com").expect("ecr");
        assert!(
            next_steps(&ecr, Concern::Network, &names)[0]
                .contains("com.amazonaws.us-east-1.ecr.dkr")
        );
        let hub = next_steps(&Platform::DockerHub, Concern::Limit, &names).join("\n");
        assert!(hub.contains("ratelimitpreview/test") && hub.contains("-n shop"));
        assert!(
            next_steps(&Platform::Ghcr, Concern::Identity, &Names::default())[0]
                .contains("-n NAMESPACE")
        );
    }

    #[test]
    fn a_refusal_by_address_is_a_network_concern() {
        assert_eq!(
            Concern::of(Layer::Forbidden, None, true),
            Some(Concern::Network)
        );
        assert_eq!(
            Concern::of(Layer::Forbidden, None, false),
            Some(Concern::Identity)
        );
        assert_eq!(
            Concern::of(Layer::Blob, Some(Layer::Dns), false),
            Some(Concern::Network)
        );
        assert_eq!(Concern::of(Layer::Other, None, false), None);
    }
}
