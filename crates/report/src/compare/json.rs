//! A comparison as JSON (`gatebench compare --json`): the [`Comparison`] structure itself,
//! serialized, so the file carries every figure the other renderers show and more.

use super::Comparison;

/// The comparison as pretty JSON (the [`Comparison`] structure).
pub fn render(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).expect("comparisons always serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::run;
    use crate::compare::{compare, Options};

    #[test]
    fn json_rendering() {
        let a = run("A", &[("echo", 10, &[100.0, 101.0, 99.0, 100.5, 99.5])]);
        let b = run("B", &[("echo", 10, &[120.0, 121.0, 119.0, 120.5, 119.5])]);
        let c = compare(
            &[a, b],
            &Options {
                threshold: Some(5.0),
                metrics: vec!["throughput_rps".into()],
                ..Options::default()
            },
        );
        insta::assert_snapshot!(render(&c), @r#"
            {
              "schema_version": 2,
              "kind": "gatebench-comparison",
              "alpha": 0.05,
              "confidence": 0.95,
              "threshold": 5.0,
              "baseline": "A",
              "runs": [
                {
                  "label": "A",
                  "source": "results/A",
                  "cells": 1,
                  "repeats_min": 5,
                  "repeats_max": 5,
                  "failed": 0,
                  "environment": {
                    "schema_version": 2,
                    "cpu_model": "Test CPU",
                    "cores": 2,
                    "cores_available": 2,
                    "kernel": "Linux 6.1.0",
                    "arch": "x86_64",
                    "gatebench_version": "0.1.0",
                    "git_revision": "6ec44bd"
                  }
                },
                {
                  "label": "B",
                  "source": "results/B",
                  "cells": 1,
                  "repeats_min": 5,
                  "repeats_max": 5,
                  "failed": 0,
                  "environment": {
                    "schema_version": 2,
                    "cpu_model": "Test CPU",
                    "cores": 2,
                    "cores_available": 2,
                    "kernel": "Linux 6.1.0",
                    "arch": "x86_64",
                    "gatebench_version": "0.1.0",
                    "git_revision": "6ec44bd"
                  }
                }
              ],
              "warnings": [],
              "differences": [],
              "pairs": [
                {
                  "baseline": "A",
                  "candidate": "B",
                  "rows": [
                    {
                      "cell": "echo_u10_s50_d0",
                      "key": {
                        "scenario": "echo",
                        "protocol": "h1c",
                        "users": 10,
                        "rate": null,
                        "size_bytes": 50,
                        "delay_ms": 0.0
                      },
                      "metric": "throughput_rps",
                      "unit": "req/s",
                      "higher_is_better": true,
                      "baseline": {
                        "n": 5,
                        "median": 100.0,
                        "min": 99.0,
                        "max": 101.0,
                        "values": [
                          100.0,
                          101.0,
                          99.0,
                          100.5,
                          99.5
                        ]
                      },
                      "candidate": {
                        "n": 5,
                        "median": 120.0,
                        "min": 119.0,
                        "max": 121.0,
                        "values": [
                          120.0,
                          121.0,
                          119.0,
                          120.5,
                          119.5
                        ]
                      },
                      "change": 19.99999999999993,
                      "change_unit": "%",
                      "ci": [
                        18.407960199005014,
                        21.608040201005085
                      ],
                      "ci_level": 0.9682539682539683,
                      "p_value": 0.007936507936507936,
                      "verdict": "improved",
                      "beyond_threshold": false,
                      "flags": []
                    }
                  ],
                  "geomean": [
                    {
                      "metric": "throughput_rps",
                      "change_percent": 19.999999999999996,
                      "cells": 1
                    }
                  ],
                  "counts": {
                    "improved": 1,
                    "regressed": 0,
                    "regressed_beyond_threshold": 0,
                    "no_significant_change": 0,
                    "too_few_repeats": 0
                  },
                  "only_in_baseline": [],
                  "only_in_candidate": []
                }
              ]
            }
        "#);
    }
}
