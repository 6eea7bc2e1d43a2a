//! `gatebench k8s --shards N -- <load args>`: prints a Kubernetes Indexed Job (JSON, which
//! `kubectl apply -f -` reads as it reads YAML) whose N pods each run one shard of a
//! `gatebench load` run, all starting at one instant.
//!
//! Each pod runs `gatebench load <load args> --shard $(JOB_COMPLETION_INDEX)/N --start-at T
//! --json - -q` from the image built by the repository's `Dockerfile`. The Job controller gives
//! each pod of an Indexed Job its index in the annotation
//! `batch.kubernetes.io/job-completion-index`; the container declares `JOB_COMPLETION_INDEX`
//! from it with the downward API, so the kubelet's `$(VAR)` expansion of the command line is
//! defined whatever the cluster injects by itself. `T` is fixed when the manifest is printed
//! (now + `--start-in`): print a fresh manifest for every run. Each pod prints its record on
//! stdout; `kubectl logs` gives it back and `gatebench merge` merges the N of them.
//!
//! The load arguments are checked here as `gatebench load` checks them (for the last shard,
//! whose share is the smallest), so a typo fails now, not in N pods; `--shard`, `--start-at`
//! and `--json` are this command's to set, and `--body-file` is refused (the pods do not have
//! this machine's files).

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use clap::{Args, Parser};
use gatebench_loadgen::bounds::parse_duration;
use gatebench_loadgen::{LoadConfig, LoadgenError};
use serde_json::json;

use crate::cmd::load::LoadArgs;

/// `gatebench k8s`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints the Job as JSON on stdout. On a cluster:\n  gatebench k8s --shards 4 \
--image REGISTRY/gatebench:TAG -- http://sut:8688/ -c 400 -R 80000 -d 60s | kubectl apply -f -\n  \
kubectl wait --for=condition=complete job/gatebench-load --timeout=10m\n  for i in 0 1 2 3; do kubectl logs \
--tail=-1 -l batch.kubernetes.io/job-completion-index=$i,job-name=gatebench-load > shard-$i.log; done\n  \
gatebench merge shard-*.log > merged.json\n\nSee docs/shards.md. Exit status: 0 printed, 2 bad \
arguments."
)]
pub struct K8sArgs {
    /// Shards, one pod each (at least 1).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Container image holding gatebench as built by the repository's Dockerfile.
    #[arg(long, value_name = "IMAGE", default_value = concat!("gatebench:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Time from now to the shards' common start: long enough to schedule every pod and pull
    /// its image.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub start_in: Duration,
    /// The Job's name (a DNS label).
    #[arg(long, default_value = "gatebench-load")]
    pub name: String,
    /// The Job's namespace [default: kubectl's current one].
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// `gatebench load` arguments: the URL and its options, after `--`.
    #[arg(last = true, required = true, value_name = "LOAD ARGS")]
    pub load: Vec<String>,
}

/// The environment variable that carries a pod's index.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// Runs the subcommand.
pub fn run(args: K8sArgs) -> Result<ExitCode> {
    let start_at = SystemTime::now() + args.start_in;
    let job = manifest(&args, start_at)?;
    println!(
        "{}",
        serde_json::to_string_pretty(&job).context("encoding the manifest")?
    );
    Ok(ExitCode::SUCCESS)
}

/// The Job for `args`, its shards starting at `start_at`.
pub fn manifest(args: &K8sArgs, start_at: SystemTime) -> Result<serde_json::Value> {
    if args.shards == 0 {
        anyhow::bail!("--shards: a run has at least one shard");
    }
    if !is_dns_label(&args.name) {
        anyhow::bail!(
            "--name `{}`: a Job name is lowercase letters, digits and '-', at most 63, \
             starting and ending with a letter or digit",
            args.name
        );
    }
    // Check the load arguments now, as `gatebench load` will parse them in every pod.
    let load = LoadArgsOnly::try_parse_from(
        std::iter::once("gatebench load".to_owned()).chain(args.load.iter().cloned()),
    )
    .map_err(|e| {
        let text = e.render().to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        anyhow::anyhow!("the load arguments after --: {first}")
    })?;
    for (given, flag) in [
        (load.args.shard.is_some(), "--shard"),
        (load.args.start_at.is_some(), "--start-at"),
        (load.args.json.is_some(), "--json"),
    ] {
        if given {
            anyhow::bail!("the load arguments after -- may not set {flag}: gatebench k8s sets it");
        }
    }
    if load.args.body_file.is_some() {
        anyhow::bail!(
            "--body-file: the pods cannot read this machine's files; use --body or --payload-size"
        );
    }
    let n = args.shards;
    // The last shard has the smallest share: if its configuration is valid, all are.
    let mut last = load.args;
    last.shard = Some((n - 1, n));
    let spec = crate::cmd::load::spec(&last)?;
    if let Err(e) = LoadConfig::try_new(spec.clone()) {
        // A cluster's service names (`sut.perf.svc`) resolve in the pods, not necessarily
        // here: check everything else with the host standing for a loopback address.
        let LoadgenError::Resolve { .. } = e else {
            return Err(e.into());
        };
        let mut local = spec;
        local.url = with_loopback_host(&local.url);
        LoadConfig::try_new(local)?;
    }
    let at = humantime::format_rfc3339_seconds(start_at).to_string();
    let mut command = vec!["gatebench".to_owned(), "load".to_owned()];
    command.extend(args.load.iter().cloned());
    command.extend([
        "--shard".to_owned(),
        format!("$({INDEX_VAR})/{n}"),
        "--start-at".to_owned(),
        at.clone(),
        "--json".to_owned(),
        "-".to_owned(),
        "--quiet".to_owned(),
    ]);
    let labels = json!({
        "app.kubernetes.io/name": "gatebench",
        "app.kubernetes.io/instance": args.name,
    });
    let mut metadata = json!({
        "name": args.name,
        "labels": labels,
        "annotations": { "gatebench/start-at": at },
    });
    if let Some(ns) = &args.namespace {
        metadata["namespace"] = json!(ns);
    }
    Ok(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A shard that fails (a late start, a refused probe) fails the run: no retry
            // could start at the agreed instant.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    // Shards on distinct nodes where the cluster has them: two shards on one
                    // node share its CPUs and network, which is what sharding is to avoid.
                    "affinity": { "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [{
                            "weight": 100,
                            "podAffinityTerm": {
                                "topologyKey": "kubernetes.io/hostname",
                                "labelSelector": { "matchLabels": {
                                    "app.kubernetes.io/instance": args.name,
                                }},
                            },
                        }],
                    }},
                    "containers": [{
                        "name": "gatebench",
                        "image": args.image,
                        "command": command,
                        "env": [{
                            "name": INDEX_VAR,
                            "valueFrom": { "fieldRef": {
                                "fieldPath":
                                    "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                            }},
                        }],
                    }],
                },
            },
        },
    }))
}

/// `gatebench load`'s arguments alone, to check them as the pods will parse them.
#[derive(Debug, Parser)]
#[command(name = "gatebench load")]
struct LoadArgsOnly {
    #[command(flatten)]
    args: LoadArgs,
}

/// `url` with its host replaced by `127.0.0.1` (scheme, port, path and query kept).
fn with_loopback_host(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let port = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => &authority[i..],
        _ => "",
    };
    format!("{scheme}://127.0.0.1{port}{tail}")
}

/// A DNS label (RFC 1123), what Kubernetes accepts as a Job's name.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> K8sArgs {
        #[derive(Debug, Parser)]
        struct Wrap {
            #[command(flatten)]
            k: K8sArgs,
        }
        Wrap::try_parse_from(["k8s"].iter().chain(extra)).unwrap().k
    }

    #[test]
    fn a_cluster_host_is_checked_as_loopback() {
        assert_eq!(
            with_loopback_host("http://sut.perf.svc:8688/a?b"),
            "http://127.0.0.1:8688/a?b"
        );
        assert_eq!(with_loopback_host("https://sut"), "https://127.0.0.1");
        assert_eq!(with_loopback_host("http://[::1]/"), "http://127.0.0.1/");
    }

    #[test]
    fn load_arguments_are_checked_before_any_pod_runs() {
        let at = SystemTime::now() + Duration::from_secs(60);
        let e = |a: &[&str]| manifest(&args(a), at).unwrap_err().to_string();
        assert!(e(&["--shards", "2", "--", "http://x/", "-c", "1"])
            .contains("leaves shard 1 without a connection"));
        assert!(
            e(&["--shards", "1", "--", "http://x/", "--body-file", "b"]).contains("--body-file")
        );
        assert!(e(&["--shards", "2", "--", "http://x/", "--shard", "0/2"])
            .contains("may not set --shard"));
        assert!(e(&["--shards", "2", "--", "http://x/", "--bogus"]).contains("--bogus"));
        assert!(
            e(&["--shards", "1", "--", "http://x.invalid/", "-H", "NoColon"])
                .contains("invalid header")
        );
        assert!(e(&["--shards", "0", "--", "http://x/"]).contains("at least one shard"));
        assert!(e(&["--shards", "1", "--name", "Bad_Name", "--", "http://x/"]).contains("--name"));
        let job = manifest(&args(&["--shards", "3", "--", "http://x/", "-c", "6"]), at).unwrap();
        assert_eq!(job["spec"]["completions"], 3);
        let cmd = job["spec"]["template"]["spec"]["containers"][0]["command"]
            .as_array()
            .unwrap();
        assert_eq!(cmd[0], "gatebench");
        assert!(cmd.iter().any(|a| a == "$(JOB_COMPLETION_INDEX)/3"));
    }
}
