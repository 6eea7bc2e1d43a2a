//! Reloads: an intermediary started with an upstreams file (`--upstreams-file`) reads it again
//! on SIGHUP and serves its new set from then on, without failing a request.
//!
//! The rule: a reload changes which upstreams new requests go to, and nothing else. A request
//! in flight finishes (and retries) on the set it started with; an upstream in both sets keeps
//! its pooled connections, health and ejection state, so a SIGHUP with an unchanged file (an
//! `nginx -s reload` that changed nothing) drops nothing; an upstream that left has its idle
//! connections closed at once and its busy ones after their exchange (`balancer::Members`,
//! `upstream::Pool::retire`). A file that cannot be read or does not parse, or a set the
//! service cannot take (none, or more than one for the proxy and the transform, an https://
//! upstream without TLS), is refused with one warning line and the old set kept.
//!
//! The file holds one upstream URL a line; blank lines and lines starting with `#` are skipped.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use tracing::{info, warn};

use super::{Intermediary, ProxyConfig, Shared};
use crate::error::ServicesError;
use crate::upstream::Target;

/// Reads an upstreams file: one URL a line, blank lines and `#` comments skipped; refused when
/// unreadable, when a line holds more than one word, or when no URL is left.
pub fn read_upstreams(path: &Path) -> Result<Vec<String>, ServicesError> {
    let bad = |reason: String| ServicesError::invalid("upstreams_file", reason);
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("cannot be read ({}): {e}", path.display())))?;
    let mut urls = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.split_whitespace().count() > 1 {
            return Err(bad(format!(
                "{} line {}: one URL a line, got {line:?}",
                path.display(),
                n + 1
            )));
        }
        urls.push(line.to_owned());
    }
    if urls.is_empty() {
        return Err(bad(format!("{} holds no upstream URL", path.display())));
    }
    Ok(urls)
}

/// What one reload did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reloaded {
    /// The file names the set already served: nothing changed.
    Unchanged,
    /// The new set serves new requests; this many upstreams left it.
    Changed { gone: usize },
}

/// Reads `path` again and, when it names another set that the service can take, makes it the
/// set of every new request; upstreams that left are retired.
pub(crate) fn reload(shared: &Shared, path: &Path) -> Result<Reloaded, ServicesError> {
    let urls = read_upstreams(path)?;
    if !matches!(shared.kind, Intermediary::Balance { .. }) && urls.len() > 1 {
        return Err(ServicesError::invalid(
            "upstreams_file",
            format!(
                "takes one URL for the {} (use balance for several)",
                shared.kind.name()
            ),
        ));
    }
    let targets = urls
        .iter()
        .map(|url| Target::parse(url))
        .collect::<Result<Vec<_>, _>>()?;
    if targets.iter().any(|t| t.https) && !shared.connector.has_tls() {
        return Err(ServicesError::invalid(
            "upstreams_file",
            "names an https:// upstream, but no TLS client could be prepared when the service \
             started (trust roots? give --upstream-cacert or --insecure-upstream)",
        ));
    }
    let current = shared.members.current();
    if current
        .urls()
        .iter()
        .copied()
        .eq(targets.iter().map(|t| t.url.as_str()))
    {
        return Ok(Reloaded::Unchanged);
    }
    let (next, gone) = current.renewed(targets, || shared.new_pool.pool(), shared.kind.ejection());
    let urls = next.urls().join(" ");
    shared.members.replace(next);
    for upstream in &gone {
        upstream.pool.retire();
    }
    info!(
        service = shared.kind.name(),
        upstreams = %urls,
        removed = gone.len(),
        "reloaded: new requests go to the new upstreams",
    );
    Ok(Reloaded::Changed { gone: gone.len() })
}

/// The task that reloads on every SIGHUP, when `config` has an upstreams file; it must be run
/// on a runtime with signals. A SIGHUP between the start and the task's first poll is caught
/// by one reload as it starts (which changes nothing when the file did not change).
pub(crate) fn on_sighup(
    shared: &Arc<Shared>,
    config: &ProxyConfig,
) -> Result<Option<impl Future<Output = ()> + Send + 'static>, ServicesError> {
    let Some(path) = config.upstreams_file.clone() else {
        return Ok(None);
    };
    let shared = shared.clone();
    Ok(Some(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(error) => {
                warn!(%error, "cannot listen for SIGHUP: no reloads");
                return std::future::pending().await;
            }
        };
        let _ = reload_logged(&shared, &path);
        while hangups.recv().await.is_some() {
            if reload_logged(&shared, &path) == Some(Reloaded::Unchanged) {
                info!(
                    service = shared.kind.name(),
                    "reloaded: upstreams unchanged"
                );
            }
        }
    }))
}

/// [`reload`], its refusal logged as one line; `None` when refused.
fn reload_logged(shared: &Shared, path: &Path) -> Option<Reloaded> {
    match reload(shared, path) {
        Ok(done) => Some(done),
        Err(error) => {
            warn!(
                service = shared.kind.name(),
                "reload refused, the upstreams stay as they were: {error}"
            );
            None
        }
    }
}
