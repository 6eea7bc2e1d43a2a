//! The store on a real PostgreSQL: Debian's server binaries (`/usr/lib/postgresql/*/bin`,
//! installed by `scripts/postgres.sh`) start a server for the test on a new data directory in
//! a temporary directory, listening on a unix socket there and on no TCP port; every case runs
//! against a database of its own; the server is stopped by its PID at the end.
//!
//! initdb and postgres refuse to run as root: as root, they run as the `postgres` system user
//! the Debian package creates (`setpriv`, which execs, so the PID is the server's), the
//! temporary directory given to that user. Without the binaries (or, as root, without that
//! user) the test prints `SKIPPED: …` and passes, unless `CI` is set, where it fails.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gatebench_history::{HistoryError, Location, Store};

use crate::cases;
use crate::fixture::TempDir;

/// A PostgreSQL server started for a test, stopped (SIGINT: fast shutdown) and its directory
/// removed when dropped.
struct Server {
    child: Child,
    socket_dir: PathBuf,
    _dir: TempDir,
}

impl Server {
    /// `postgres://` URL of database `db` over the socket.
    fn url(&self, db: &str) -> String {
        let host = self.socket_dir.display().to_string().replace('/', "%2F");
        format!("postgres://postgres@{host}:5432/{db}")
    }

    /// A fresh, empty database called `name`.
    fn fresh(&self, name: &str) -> Location {
        let mut admin = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        // Separately: CREATE DATABASE cannot run in the implicit transaction of a batch.
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
            .unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        Location::parse(&self.url(name)).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why the server cannot be started here.
fn skip(reason: &str) -> Option<Server> {
    if std::env::var_os("CI").is_some() {
        panic!("PostgreSQL test cannot run with CI set: {reason} (run scripts/postgres.sh)");
    }
    eprintln!("SKIPPED: PostgreSQL store test: {reason} (run scripts/postgres.sh as root)");
    None
}

/// The newest `/usr/lib/postgresql/<major>/bin` holding initdb and postgres.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let major: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("postgres").is_file()).then_some((major, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

/// `id -u NAME` / `id -g NAME`.
fn id_of(flag: &str, user: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, user]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

/// `program args…`, as the `postgres` user when we are root, in `cwd` (which that user can
/// enter, unlike perhaps the test's own working directory).
fn command(as_user: Option<(u32, u32)>, program: &Path, cwd: &Path) -> Command {
    let mut c = match as_user {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg("--")
                .arg(program);
            c
        }
        None => Command::new(program),
    };
    c.current_dir(cwd);
    c
}

/// Starts a server, or says why not.
fn start() -> Option<Server> {
    let Some(bin) = bin_dir() else {
        return skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin");
    };
    // Our effective uid is the owner of /proc/self.
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    let as_user = if root {
        match (id_of("-u", "postgres"), id_of("-g", "postgres")) {
            (Some(u), Some(g)) => Some((u, g)),
            _ => {
                return skip("running as root and there is no `postgres` user to run the server as")
            }
        }
    } else {
        None
    };
    // As root, under /tmp rather than $TMPDIR, which may sit in a directory the postgres user
    // cannot enter (and a short path keeps the socket's within the 107 bytes a unix socket
    // path may have).
    let dir = match as_user {
        Some(_) => TempDir::new_in(Path::new("/tmp"), "pg"),
        None => TempDir::new("pg"),
    };
    let data = dir.join("data");
    let socket_dir = dir.join("sock");
    std::fs::create_dir_all(&socket_dir).unwrap();
    if let Some((uid, gid)) = as_user {
        for p in [&dir.0, &socket_dir] {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
        }
    }
    let init = command(as_user, &bin.join("initdb"), &dir.0)
        .args(["-D"])
        .arg(&data)
        .args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    if let Some((uid, gid)) = as_user {
        std::os::unix::fs::chown(dir.join("server.log"), Some(uid), Some(gid)).unwrap();
    }
    let child = command(as_user, &bin.join("postgres"), &dir.0)
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&socket_dir)
        .args(["-p", "5432", "-c", "listen_addresses=", "-c", "fsync=off"])
        .args(["-c", "max_connections=40"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server {
        child,
        socket_dir,
        _dir: dir,
    };
    let start = Instant::now();
    loop {
        match postgres::Client::connect(&server.url("postgres"), postgres::NoTls) {
            Ok(_) => break,
            Err(e) if start.elapsed() > Duration::from_secs(30) => {
                let log =
                    std::fs::read_to_string(server._dir.join("server.log")).unwrap_or_default();
                panic!("PostgreSQL did not accept connections in 30 s: {e}\n{log}");
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    Some(server)
}

#[test]
fn the_store_on_postgresql() {
    let Some(server) = start() else {
        return;
    };
    let fresh = |name: &str| server.fresh(name);
    cases::all(&fresh);

    // A newer schema is refused; an unreachable server is one line.
    let loc = server.fresh("newer");
    drop(Store::open(&loc).unwrap());
    let mut c = postgres::Client::connect(&server.url("newer"), postgres::NoTls).unwrap();
    c.batch_execute("INSERT INTO schema_migrations VALUES (99, 'future', 0, '9.9.9')")
        .unwrap();
    let e = Store::open(&loc).unwrap_err();
    assert!(
        matches!(e, HistoryError::NewerSchema { found: 99, .. }),
        "{e}"
    );
    let gone = Location::parse(&server.url("postgres").replace("5432", "5433")).unwrap();
    let e = Store::open(&gone).unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

/// The scale on PostgreSQL (`cargo test --release -p gatebench-history -- --ignored
/// scale`): prints the times and the database's size, at most 200 MB.
#[test]
#[ignore = "a scale measurement: run with --release -- --ignored"]
fn scale() {
    let Some(server) = start() else {
        return;
    };
    let fresh = |name: &str| server.fresh(name);
    cases::scale(&fresh);
    let mut c = postgres::Client::connect(&server.url("scale"), postgres::NoTls).unwrap();
    let size: i64 = c
        .query_one("SELECT pg_database_size('scale')", &[])
        .unwrap()
        .get(0);
    println!("scale: PostgreSQL database {:.1} MB", size as f64 / 1e6);
    assert!(size < 200_000_000);
}
