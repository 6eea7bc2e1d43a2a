//! The CSV files of a results directory, one serde row type per file: [`SampleRow`] for a
//! cell's `samples.csv`, [`TimelineRow`] for its `timeline.csv` (the runner writes rows with
//! [`to_csv`]; the report reads them back with [`read_rows`]), and [`SummaryCsvRow`] for
//! `summary.csv` and `warmup.csv` (the report fills it with the values its tables show).
//!
//! Writing keeps the fixed decimals the files have always had (`{:.3}` seconds, `{:.1}`
//! percent, …), so readers and plots see the same text. Reading is lenient, as a plot with a
//! gap beats no report: a line that does not parse is skipped, blanks around a value are
//! trimmed, and columns are taken by position after the header line, so a column added at the
//! end (as `samples.csv` gained `threads`, `fds`, …) reads as absent in older files.

use serde::{Deserialize, Serialize, Serializer};

/// One line of `samples.csv`: one `/proc` sample of the SUT's process group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    /// End of the sample's interval, seconds since the cell started (3 decimals).
    #[serde(serialize_with = "fixed3")]
    pub t_s: f64,
    /// `before`, `warmup`, `measurement` or `after`.
    pub window: String,
    /// CPU over the interval, percent of one core (1 decimal).
    #[serde(serialize_with = "fixed1")]
    pub cpu_percent: f64,
    /// Resident memory, MiB (2 decimals).
    #[serde(serialize_with = "fixed2")]
    pub rss_mib: f64,
    /// Threads (absent in the oldest files).
    #[serde(default, deserialize_with = "csv::invalid_option")]
    pub threads: Option<u64>,
    /// Open descriptors (absent in the oldest files).
    #[serde(default, deserialize_with = "csv::invalid_option")]
    pub fds: Option<u64>,
    /// Processes in the group (absent in the oldest files).
    #[serde(default, deserialize_with = "csv::invalid_option")]
    pub processes: Option<u32>,
    /// 1-minute load average, 2 decimals (absent in the oldest files).
    #[serde(
        default,
        deserialize_with = "csv::invalid_option",
        serialize_with = "fixed2_opt"
    )]
    pub loadavg_1m: Option<f64>,
}

impl SampleRow {
    /// The header line of `samples.csv`: the fields' names in order.
    pub const HEADER: &'static str =
        "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n";
}

/// One line of `timeline.csv`: one of the load's one-second intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// End of the interval, seconds since the cell started (3 decimals).
    #[serde(serialize_with = "fixed3")]
    pub t_s: f64,
    /// `warmup` or `measurement`.
    pub window: String,
    /// Responses in the interval (`None` when a line's field is empty or unreadable).
    #[serde(deserialize_with = "csv::invalid_option")]
    pub responses: Option<u64>,
    /// Errors in the interval (`None` likewise).
    #[serde(deserialize_with = "csv::invalid_option")]
    pub errors: Option<u64>,
    /// Responses per second over the interval's true length (1 decimal).
    #[serde(serialize_with = "fixed1")]
    pub rps: f64,
    /// 99th percentile latency, milliseconds (3 decimals).
    #[serde(serialize_with = "fixed3")]
    pub p99_ms: f64,
    /// The arrival program's mean rate over the interval, requests/s (1 decimal). Written
    /// only by cells that run a program (a `rates` program or Poisson arrivals), whose files
    /// then have the column in every line ([`TimelineRow::HEADER_WITH_TARGET`]); the other
    /// cells' files are as they always were, and read back as `None`.
    #[serde(
        default,
        deserialize_with = "csv::invalid_option",
        serialize_with = "fixed1_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_rate: Option<f64>,
}

impl TimelineRow {
    /// The header line of `timeline.csv`: the fields' names in order.
    pub const HEADER: &'static str = "t_s,window,responses,errors,rps,p99_ms\n";
    /// The header line of the `timeline.csv` of a cell with an arrival program.
    pub const HEADER_WITH_TARGET: &'static str =
        "t_s,window,responses,errors,rps,p99_ms,target_rate\n";
}

/// One line of `summary.csv` or `warmup.csv`: one cell, its values formatted as the summary
/// tables show them (so every output agrees to the digit), under the header of seed 004's
/// column names that `gatebench-report` writes (`Scenario Name,…,Flags,Cell`).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryCsvRow<'a> {
    /// Scenario Name.
    pub scenario_name: &'a str,
    /// Concurrent Users (or the open model's rate).
    pub users: &'a str,
    /// Message Size (Bytes).
    pub size_bytes: &'a str,
    /// Back-end Service Delay (ms).
    pub delay_ms: &'a str,
    /// Error %.
    pub error_percent: &'a str,
    /// Throughput (Requests/sec).
    pub throughput_rps: &'a str,
    /// Average Response Time (ms).
    pub mean_ms: &'a str,
    /// Standard Deviation of Response Time (ms).
    pub stdev_ms: &'a str,
    /// 99th Percentile of Response Time (ms).
    pub p99_ms: &'a str,
    /// SUT CPU (%).
    pub sut_cpu_percent: &'a str,
    /// SUT Memory (MiB).
    pub sut_memory_mib: &'a str,
    /// SUT Max Threads.
    pub sut_threads_max: &'a str,
    /// SUT Max Open Files.
    pub sut_fds_max: &'a str,
    /// Load Average (1 min).
    pub loadavg: &'a str,
    /// GC Throughput (%).
    pub gc_throughput_percent: &'a str,
    /// GC Pause p99 (ms).
    pub gc_pause_p99_ms: &'a str,
    /// Memory Footprint After Full GC (MiB).
    pub gc_heap_after_full_gc_mib: &'a str,
    /// Upstream Connections per 1,000 Requests (the echo back-ends' count; empty without it).
    pub upstream_connections_per_1k_requests: &'a str,
    /// Upstream TLS Resumption (%).
    pub upstream_tls_resumption_percent: &'a str,
    /// Balance Spread: the most-loaded back-end's share ÷ the even share.
    pub balance_spread: &'a str,
    /// Thresholds: empty, `pass` or `FAIL: …`.
    pub thresholds: &'a str,
    /// Flags.
    pub flags: &'a str,
    /// The cell id.
    pub cell: &'a str,
}

fn fixed<S: Serializer>(v: f64, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{v:.decimals$}"))
}

fn fixed1<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 1, s)
}

fn fixed2<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 2, s)
}

fn fixed3<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 3, s)
}

fn fixed1_opt<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => fixed(*v, 1, s),
        None => s.serialize_none(),
    }
}

fn fixed2_opt<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => fixed(*v, 2, s),
        None => s.serialize_none(),
    }
}

/// The CSV text of `rows` under `header` (the row type's `HEADER`, which names its fields in
/// order; it is written even when there is no row).
pub fn to_csv<R: Serialize>(header: &str, rows: impl IntoIterator<Item = R>) -> String {
    let mut out = header.as_bytes().to_vec();
    {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(&mut out);
        for row in rows {
            // Rows are numbers and fixed words written to memory: this cannot fail.
            w.serialize(row).expect("a CSV row to memory");
        }
        w.flush().expect("a CSV row to memory");
    }
    String::from_utf8(out).expect("CSV rows are UTF-8")
}

/// The lines of a CSV file after its header that deserialize into `T` by position, in order;
/// the others (short, broken, unreadable) are skipped.
pub fn read_rows<T: for<'de> Deserialize<'de>>(text: &str) -> Vec<T> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    reader
        .records()
        .filter_map(|record| record.ok()?.deserialize(None).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SampleRow {
        SampleRow {
            t_s: 1.0584,
            window: "warmup".into(),
            cpu_percent: 87.0,
            rss_mib: 11.714,
            threads: Some(3),
            fds: Some(122),
            processes: Some(1),
            loadavg_1m: Some(4.39),
        }
    }

    fn timeline() -> TimelineRow {
        TimelineRow {
            t_s: 1.23456,
            window: "warmup".into(),
            responses: Some(10),
            errors: Some(0),
            rps: 9.96,
            p99_ms: 0.5,
            target_rate: None,
        }
    }

    #[test]
    fn rows_are_written_as_the_files_always_were() {
        assert_eq!(
            to_csv(TimelineRow::HEADER, [timeline()]),
            "t_s,window,responses,errors,rps,p99_ms\n1.235,warmup,10,0,10.0,0.500\n"
        );
        let program = TimelineRow {
            target_rate: Some(1250.04),
            ..timeline()
        };
        assert_eq!(
            to_csv(TimelineRow::HEADER_WITH_TARGET, [program]),
            "t_s,window,responses,errors,rps,p99_ms,target_rate\n\
             1.235,warmup,10,0,10.0,0.500,1250.0\n"
        );
        assert_eq!(
            to_csv(SampleRow::HEADER, [sample()]),
            "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n\
             1.058,warmup,87.0,11.71,3,122,1,4.39\n"
        );
        assert_eq!(
            to_csv(SampleRow::HEADER, Vec::<SampleRow>::new()),
            SampleRow::HEADER
        );
    }

    /// The header constants are the field names serde writes, so they cannot drift apart.
    #[test]
    fn headers_name_the_fields_in_order() {
        fn serde_header<R: Serialize>(row: R) -> String {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.serialize(row).unwrap();
            let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
            format!("{}\n", text.lines().next().unwrap())
        }
        assert_eq!(serde_header(sample()), SampleRow::HEADER);
        assert_eq!(serde_header(timeline()), TimelineRow::HEADER);
        let program = TimelineRow {
            target_rate: Some(1.0),
            ..timeline()
        };
        assert_eq!(serde_header(program), TimelineRow::HEADER_WITH_TARGET);
    }

    #[test]
    fn rows_read_back_leniently() {
        let text = to_csv(SampleRow::HEADER, [sample()]);
        let back: Vec<SampleRow> = read_rows(&text);
        assert_eq!(back[0].rss_mib, 11.71);
        assert_eq!(back[0].fds, Some(122));
        // An older file: four columns, blanks, a broken line.
        let old: Vec<SampleRow> =
            read_rows("t_s,window,cpu_percent,rss_mib\n 2.5 ,measurement, 10.0,3.5\nbroken\n");
        assert_eq!(old.len(), 1);
        assert_eq!(old[0].t_s, 2.5);
        assert_eq!(old[0].threads, None);
        let t: Vec<TimelineRow> =
            read_rows("t_s,window,responses,errors,rps,p99_ms\n1.500,warmup,,x,100.0,1.250\n");
        assert_eq!(t[0].responses, None);
        assert_eq!(t[0].errors, None);
        assert_eq!(t[0].p99_ms, 1.25);
        assert_eq!(t[0].target_rate, None);
        let t: Vec<TimelineRow> = read_rows(
            "t_s,window,responses,errors,rps,p99_ms,target_rate\n2.000,measurement,5,0,5.0,1.000,7.5\n",
        );
        assert_eq!(t[0].target_rate, Some(7.5));
    }
}
