//! Build script of the `gatebench` binary: lays out its code in execution order.
//!
//! `symbol-order.txt` (written by `scripts/symbol-order.sh` from a trace of the functions the
//! services and the load generator execute) is passed to the linker as
//! `--symbol-ordering-file`, so those functions sit together at the start of `.text` and a
//! process maps a few contiguous pages of the binary instead of pieces of its whole 10 MiB
//! text (docs/build.md, "Code layout"). `--no-warn-symbol-ordering` keeps entries that no
//! longer name a function (renamed or inlined since the trace) silent.
//!
//! Only lld (and linkers compatible with it) know the option, and the link fails on one that
//! does not (GNU ld: "unrecognized option"). So the argument is added only when the link is the
//! one rustc makes by default on a target where that default is lld:
//!
//! - the target is `x86_64-unknown-linux-gnu` or `aarch64-unknown-linux-gnu`: since Rust 1.90
//!   (both, as of 1.95: `rustc -Z unstable-options --print target-spec-json`) their linker
//!   flavor is `gnu-lld-cc` with a self-contained linker: `cc -fuse-ld=lld -B
//!   <sysroot>/lib/rustlib/<host>/bin/gcc-ld`, i.e. rustc's bundled rust-lld driven by cc, so
//!   the argument is spelled `-Wl,...`;
//! - the user chose no linker: no `target.<triple>.linker` in `.cargo/config` (Cargo hands it
//!   to build scripts as `RUSTC_LINKER`) and none of `-C linker`, `-C linker-flavor`,
//!   `-C linker-features` (`-lld` switches back to the system linker),
//!   `-C link-self-contained` (`-linker` uses a system `ld.lld`, which may be missing) or a
//!   `-fuse-ld=`/`--ld-path=` link argument in the flags Cargo passes
//!   (`CARGO_ENCODED_RUSTFLAGS`: RUSTFLAGS, `build.rustflags`, `target.<triple>.rustflags`);
//! - and a probe link of an empty program with exactly these flags and the option succeeds.
//!   It settles what the rules above cannot see: an older rustc (the crate builds from 1.85,
//!   before lld was the default), a rustc built with another default linker (distributions),
//!   a cross link whose `cc` cannot link the target.
//!
//! Otherwise the binary is linked as before, only without the ordering. Setting
//! `GATEBENCH_NO_SYMBOL_ORDER=1` skips it too (to measure what the ordering gives).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=GATEBENCH_NO_SYMBOL_ORDER");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    let order = manifest_dir.join("symbol-order.txt");
    match ordering_arg(&order) {
        Ok(arg) => println!("cargo:rustc-link-arg-bin=gatebench={arg}"),
        // Not a warning: a user's linker choice is legitimate, the binary is just laid out as
        // the linker pleases. `cargo build -vv` shows the reason.
        Err(why) => eprintln!("gatebench: linking without {}: {why}", order.display()),
    }
}

/// The `-Wl,...` argument that orders the binary's functions, or why it is left out.
fn ordering_arg(order: &Path) -> Result<String, String> {
    if env::var_os("GATEBENCH_NO_SYMBOL_ORDER").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("GATEBENCH_NO_SYMBOL_ORDER is set".into());
    }
    let cfg = |key: &str| env::var(format!("CARGO_CFG_TARGET_{key}")).unwrap_or_default();
    let (arch, os, env_, vendor) = (cfg("ARCH"), cfg("OS"), cfg("ENV"), cfg("VENDOR"));
    if !matches!(arch.as_str(), "x86_64" | "aarch64")
        || os != "linux"
        || env_ != "gnu"
        || vendor != "unknown"
    {
        return Err(format!(
            "target {arch}-{vendor}-{os}-{env_} does not link with lld by default"
        ));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        return Err(format!(
            "a linker is configured ({})",
            linker.to_string_lossy()
        ));
    }
    let rustflags: Vec<String> = env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .split('\x1f')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(flag) = linker_choice(&rustflags) {
        return Err(format!("the rustflags choose the linker ({flag})"));
    }
    let path = order
        .to_str()
        .ok_or("the ordering file's path is not UTF-8")?;
    let text = fs::read_to_string(order).map_err(|e| format!("reading it: {e}"))?;
    // `-Wl,` splits at commas.
    if path.contains(',') {
        return Err("its path has a comma".into());
    }
    let mut arg = format!("-Wl,--symbol-ordering-file={path},--no-warn-symbol-ordering");
    if let Some(text) = promoted_script(&text) {
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR unset")?);
        let script = out_dir.join("symbol-order.ld");
        fs::write(&script, text).map_err(|e| format!("writing {}: {e}", script.display()))?;
        let script = script.to_str().ok_or("OUT_DIR is not UTF-8")?;
        if script.contains(',') {
            return Err("OUT_DIR has a comma".into());
        }
        arg.push_str(&format!(",--script={script}"));
    }
    probe(&rustflags, &arg)?;
    Ok(arg)
}

/// A linker script that puts the ThinLTO-promoted functions of the ordering file first in
/// `.text`, just before the functions the ordering file places.
///
/// ThinLTO renames a module-local function another module calls to `NAME.llvm.HASH`, HASH a
/// hash of the defining module's bitcode. That bitcode holds the build directory (the debug
/// info's compilation directory), so in a clone of the repository elsewhere the same function
/// has another HASH, and lld's ordering file, which matches whole names only, misses it (172 of
/// 1777 entries in one clone; docs/build.md). Linker script patterns can leave HASH out:
/// rustc puts each function in a section of its own, `.text.NAME.llvm.HASH`, matched here by
/// `.text.NAME.llvm.*`. The script only names `.text`'s first input sections; `INSERT BEFORE
/// .init` (where lld's default layout has `.text`) makes it an addition to that layout rather
/// than a replacement, and lld adds every other `.text.*` section after them as usual, in the
/// ordering file's order. One `.text` rather than an output section of their own: tools that
/// only read symbols in `.text` (valgrind, which scripts/symbol-order.sh uses) still see them.
fn promoted_script(order: &str) -> Option<String> {
    let mut patterns: Vec<&str> = Vec::new();
    for name in order.lines().map(str::trim) {
        let Some(at) = name.find(".llvm.") else {
            continue;
        };
        let stem = &name[..at + ".llvm.".len()];
        // Mangled names carry no glob or script metacharacters; a line that does is no symbol.
        if stem.contains(|c: char| "*?[]\\\"(){};: \t".contains(c)) || patterns.contains(&stem) {
            continue;
        }
        patterns.push(stem);
    }
    let mut script = String::from(
        "/* Written by crates/cli/build.rs from symbol-order.txt: the promoted functions. */\n",
    );
    if patterns.is_empty() {
        return None;
    }
    script.push_str("SECTIONS\n{\n  .text :\n  {\n");
    for stem in patterns {
        script.push_str(&format!("    *(.text.{stem}*)\n"));
    }
    script.push_str("  }\n}\nINSERT BEFORE .init;\n");
    Some(script)
}

/// The first of `flags` that picks the linker, its flavor or its features.
fn linker_choice(flags: &[String]) -> Option<String> {
    const CHOOSERS: [&str; 4] = [
        "linker=",
        "linker-flavor=",
        "linker-features=",
        "link-self-contained=",
    ];
    let mut prev_is_c = false;
    for flag in flags {
        // `-Cx=y`, `-C x=y`, `--codegen x=y`, `--codegen=x=y`; `-Z` options likewise.
        let value = if prev_is_c {
            Some(flag.as_str())
        } else {
            ["-C", "--codegen=", "-Z"]
                .iter()
                .find_map(|p| flag.strip_prefix(p))
                .filter(|v| !v.is_empty())
        };
        prev_is_c = matches!(flag.as_str(), "-C" | "--codegen" | "-Z");
        let Some(value) = value else { continue };
        let picks_linker = CHOOSERS.iter().any(|c| value.starts_with(c))
            || ((value.starts_with("link-arg=") || value.starts_with("link-args="))
                && (value.contains("-fuse-ld") || value.contains("--ld-path")));
        if picks_linker {
            return Some(value.to_owned());
        }
    }
    None
}

/// Links an empty program for the target with `rustflags` and `arg`: Ok if the linker took it.
fn probe(rustflags: &[String], arg: &str) -> Result<(), String> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR unset")?);
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").map_err(|_| "TARGET unset")?;
    let src = out_dir.join("symbol_order_probe.rs");
    fs::write(&src, "fn main() {}\n").map_err(|e| format!("writing the probe: {e}"))?;
    let output = Command::new(rustc)
        .args([
            "--edition=2021",
            "--crate-type=bin",
            "--crate-name=symbol_order_probe",
            "--target",
        ])
        .arg(&target)
        .args(rustflags)
        .args(["-C", "opt-level=0", "-C", "debuginfo=0", "-C"])
        .arg(format!("link-arg={arg}"))
        .arg("-o")
        .arg(out_dir.join("symbol_order_probe"))
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running rustc for the probe link: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The linker's own complaint if there is one ("ld: unrecognized option ..."), else rustc's.
    let lines = || stderr.lines().map(str::trim);
    let why = lines()
        .find(|l| l.contains("unrecognized option") || l.contains("unknown argument"))
        .or_else(|| lines().find(|l| l.starts_with("error")))
        .unwrap_or("no message");
    Err(format!("the probe link failed: {}", why.trim()))
}
