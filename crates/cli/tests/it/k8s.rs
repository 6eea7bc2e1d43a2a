//! `gatebench k8s`: the Indexed Job it prints is validated strictly against the Kubernetes API's
//! batch/v1 Job (`k8s/batch-v1-job.schema.json`, written by `scripts/k8s-job-schema.py` from the
//! official API types of `k8s-openapi`: any field the API does not know, a field of the wrong
//! type or a missing required one fails the test), its semantics checked, and then each pod's
//! exact command line is run here, as the kubelet would run it (the
//! `$(JOB_COMPLETION_INDEX)` reference expanded from the pod's index), against a real echo
//! backend. The pods' logs are merged by `gatebench merge`. There is no cluster here: this is
//! everything but the scheduling.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::sync::OnceLock;

use boon::{Compiler, SchemaIndex, Schemas};
use gatebench_model::LoadReport;
use serde_json::Value;

use crate::support::{EchoChild, BIN};

const INDEX_ANNOTATION: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// The batch/v1 Job of the Kubernetes API as a JSON Schema, every object closed
/// (`additionalProperties: false`), apiVersion and kind pinned.
const JOB_SCHEMA: &str = include_str!("k8s/batch-v1-job.schema.json");

/// Decodes a Job and validates it against [`JOB_SCHEMA`], failing on every field the API does
/// not know (which a lenient decoder would skip without a word), on a value of the wrong type,
/// and on a wrong apiVersion or kind.
fn decode_strict(text: &str) -> Result<Value, String> {
    static SCHEMA: OnceLock<(Schemas, SchemaIndex)> = OnceLock::new();
    let (schemas, index) = SCHEMA.get_or_init(|| {
        let schema: Value = serde_json::from_str(JOB_SCHEMA).expect("the schema is JSON");
        let mut compiler = Compiler::new();
        compiler
            .add_resource("batch-v1-job.schema.json", schema)
            .expect("the schema is a resource");
        let mut schemas = Schemas::new();
        let index = compiler
            .compile("batch-v1-job.schema.json", &mut schemas)
            .unwrap_or_else(|e| panic!("compiling the Job schema: {e:#}"));
        (schemas, index)
    });
    let job: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    schemas
        .validate(&job, *index)
        .map_err(|e| format!("not a batch/v1 Job of the Kubernetes API: {e:#}"))?;
    Ok(job)
}

/// The string at `pointer` in `v`.
fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The kubelet's expansion of `$(VAR)` in a container's command (Kubernetes'
/// `third_party/forked/golang/expansion`): a defined variable is replaced, `$$` is a literal
/// `$`, and anything else is left as written.
fn kubelet_expand(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(close) = after.strip_prefix('(').and_then(|a| a.find(')')) {
            let name = &after[1..1 + close];
            match env.get(name) {
                Some(v) => out.push_str(v),
                None => out.push_str(&rest[i..i + 2 + close + 1]),
            }
            rest = &after[close + 2..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn kubelet_expansion_rules() {
    let env = BTreeMap::from([("I".to_owned(), "3".to_owned())]);
    assert_eq!(kubelet_expand("$(I)/4", &env), "3/4");
    assert_eq!(kubelet_expand("$$(I) $(J) $x", &env), "$(I) $(J) $x");
}

fn k8s(args: &[&str]) -> std::process::Output {
    Command::new(BIN).arg("k8s").args(args).output().unwrap()
}

#[test]
fn the_manifest_is_a_strict_indexed_job_and_refuses_bad_load_arguments() {
    let out = k8s(&[
        "--shards",
        "4",
        "--image",
        "registry.example/gatebench:1",
        "--name",
        "bench-1",
        "--namespace",
        "perf",
        "--",
        "http://sut:8688/",
        "-c",
        "8",
        "-R",
        "400",
        "-d",
        "30s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let job = decode_strict(&text).expect("a valid batch/v1 Job");
    assert_eq!(str_at(&job, "/metadata/name"), Some("bench-1"));
    assert_eq!(str_at(&job, "/metadata/namespace"), Some("perf"));
    let spec = &job["spec"];
    assert_eq!(str_at(spec, "/completionMode"), Some("Indexed"));
    assert_eq!(
        (&spec["completions"], &spec["parallelism"]),
        (&4.into(), &4.into())
    );
    assert_eq!(spec["backoffLimit"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(str_at(pod, "/restartPolicy"), Some("Never"));
    let c = &pod["containers"][0];
    assert_eq!(str_at(c, "/image"), Some("registry.example/gatebench:1"));
    let cmd: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(&cmd[..3], ["gatebench", "load", "http://sut:8688/"]);
    let at = cmd.iter().position(|a| *a == "--shard").unwrap();
    assert_eq!(cmd[at + 1], "$(JOB_COMPLETION_INDEX)/4");
    assert!(cmd.contains(&"--start-at"));
    let index = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "JOB_COMPLETION_INDEX")
        .unwrap();
    assert_eq!(
        str_at(index, "/valueFrom/fieldRef/fieldPath"),
        Some(INDEX_ANNOTATION)
    );

    // The strict decoding does catch what the API would not know.
    let misspelt = text.replacen("\"completionMode\"", "\"completionsMode\"", 1);
    let e = decode_strict(&misspelt).unwrap_err();
    assert!(e.contains("completionsMode"), "{e}");
    assert!(decode_strict(&text.replacen("batch/v1", "batch/v2", 1)).is_err());
    // And a value of the wrong type.
    let mut wrong: Value = serde_json::from_str(&text).unwrap();
    wrong["spec"]["backoffLimit"] = "0".into();
    let e = decode_strict(&wrong.to_string()).unwrap_err();
    assert!(e.contains("backoffLimit"), "{e}");

    for (args, want) in [
        (
            vec!["--shards", "2", "--", "http://x/", "-c", "1"],
            "leaves shard 1 without a connection",
        ),
        (
            vec!["--shards", "2", "--", "http://x/", "--json", "a"],
            "may not set --json",
        ),
        (vec!["--shards", "2", "--", "not a url"], "invalid URL"),
    ] {
        let out = k8s(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Every pod's exact command line, run here as N processes with the index each pod would get,
/// against one backend; their logs merge into one run.
#[test]
fn each_pods_command_runs_here_and_the_logs_merge() {
    let _shared = crate::support::shared();
    let echo = EchoChild::start(&[]);
    let dir = std::env::temp_dir().join(format!("gatebench-k8s-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = 2;
    let out = k8s(&[
        "--shards",
        "2",
        "--start-in",
        "5s",
        "--",
        &echo.url,
        "-c",
        "3",
        "-d",
        "1s",
        "--threads",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = decode_strict(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<String> = serde_json::from_value(container["command"].clone()).unwrap();
    // `gatebench` is the image's binary; here, this build's, found on PATH as in the image.
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let children: Vec<Child> = (0..n)
        .map(|i| {
            // The pod's environment: JOB_COMPLETION_INDEX from its index annotation.
            let mut env = BTreeMap::new();
            for e in container["env"].as_array().map_or(&[][..], Vec::as_slice) {
                assert_eq!(
                    str_at(e, "/valueFrom/fieldRef/fieldPath"),
                    Some(INDEX_ANNOTATION)
                );
                env.insert(e["name"].as_str().unwrap().to_owned(), i.to_string());
            }
            let argv: Vec<String> = command.iter().map(|a| kubelet_expand(a, &env)).collect();
            assert_eq!(
                argv[argv.iter().position(|a| a == "--shard").unwrap() + 1],
                format!("{i}/{n}")
            );
            Command::new(&argv[0])
                .args(&argv[1..])
                .envs(&env)
                .env("PATH", &path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run the pod's command")
        })
        .collect();
    let mut logs: Vec<PathBuf> = Vec::new();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "pod {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // What `kubectl logs` returns: the container's stderr (the text report) and stdout
        // (the record), in the order written.
        let log = dir.join(format!("shard-{i}.log"));
        std::fs::write(&log, [out.stderr, out.stdout].concat()).unwrap();
        logs.push(log);
    }
    let out = Command::new(BIN).arg("merge").args(&logs).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: LoadReport = serde_json::from_slice(&out.stdout).unwrap();
    let info = merged.merged.as_ref().unwrap();
    assert_eq!(info.count, 2);
    assert_eq!(merged.config.connections, 3);
    let m = &merged.measurement;
    assert_eq!(
        m.requests,
        info.shards.iter().map(|s| s.requests).sum::<u64>()
    );
    assert!(m.requests > 0);
    assert_eq!(m.outcomes.errors(), 0, "{:?}", m.outcomes);
    assert!(info.start_skew_ms < 1000.0, "{}", info.start_skew_ms);
    let _ = std::fs::remove_dir_all(dir);
}
