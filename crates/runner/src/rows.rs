//! The row types of the CSV files the runner writes in a cell's directory (`samples.csv`,
//! `timeline.csv`), one serde type per file, and the writer that turns rows into the file.
//!
//! Numbers keep the fixed decimals the files have always had (`{:.3}` seconds, `{:.1}` percent,
//! …), so readers and plots see the same text: [`Fixed`] carries the count of decimals.

use serde::Serialize;

/// A number written with a fixed count of decimals (`{:.N}`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fixed(pub f64, pub usize);

impl Serialize for Fixed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.*}", self.1, self.0))
    }
}

/// One line of `samples.csv`: one `/proc` sample of the SUT's process group.
#[derive(Debug, Serialize)]
pub(crate) struct SampleRow {
    /// End of the sample's interval, seconds since the cell started (3 decimals).
    pub t_s: Fixed,
    /// `before`, `warmup`, `measurement` or `after`.
    pub window: &'static str,
    /// CPU over the interval, percent of one core (1 decimal).
    pub cpu_percent: Fixed,
    /// Resident memory, MiB (2 decimals).
    pub rss_mib: Fixed,
    /// Threads.
    pub threads: u64,
    /// Open descriptors.
    pub fds: u64,
    /// Processes in the group.
    pub processes: u32,
    /// 1-minute load average (2 decimals).
    pub loadavg_1m: Fixed,
}

/// The header of `samples.csv`.
pub(crate) const SAMPLES_HEADER: &str =
    "t_s,window,cpu_percent,rss_mib,threads,fds,processes,loadavg_1m\n";

/// One line of `timeline.csv`: one of the load's one-second intervals.
#[derive(Debug, Serialize)]
pub(crate) struct TimelineRow {
    /// End of the interval, seconds since the cell started (3 decimals).
    pub t_s: Fixed,
    /// `warmup` or `measurement`.
    pub window: &'static str,
    /// Responses in the interval.
    pub responses: u64,
    /// Errors in the interval.
    pub errors: u64,
    /// Responses per second over the interval (1 decimal).
    pub rps: Fixed,
    /// 99th percentile latency, milliseconds (3 decimals).
    pub p99_ms: Fixed,
}

/// The header of `timeline.csv`.
pub(crate) const TIMELINE_HEADER: &str = "t_s,window,responses,errors,rps,p99_ms\n";

/// The CSV text of `rows` under `header` (which must name the row type's fields in order; it
/// is written even when there is no row).
pub(crate) fn to_csv<R: Serialize>(header: &str, rows: impl IntoIterator<Item = R>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_written_as_the_files_always_were() {
        let rows = [TimelineRow {
            t_s: Fixed(1.23456, 3),
            window: "warmup",
            responses: 10,
            errors: 0,
            rps: Fixed(9.96, 1),
            p99_ms: Fixed(0.5, 3),
        }];
        assert_eq!(
            to_csv(TIMELINE_HEADER, rows),
            "t_s,window,responses,errors,rps,p99_ms\n1.235,warmup,10,0,10.0,0.500\n"
        );
        assert_eq!(
            to_csv(SAMPLES_HEADER, Vec::<SampleRow>::new()),
            SAMPLES_HEADER
        );
    }
}
