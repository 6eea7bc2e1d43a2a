//! `gatebench history export`: the stored figures in tidy form ([`crate::store::ExportRow`],
//! one row per version × cell × repeat × metric) as CSV with a header line, or as a JSON array
//! of objects, for spreadsheets, notebooks and other tools.

use std::io::Write;

use crate::store::ExportRow;

/// The export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// CSV, one header line (the [`ExportRow`] field names), an empty field for no value.
    Csv,
    /// A JSON array of objects with the [`ExportRow`] field names, `null` for no value.
    Json,
}

/// Writes `rows` to `out` in `format`.
pub fn write(rows: &[ExportRow], format: Format, out: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Csv => {
            let mut w = csv::Writer::from_writer(out);
            if rows.is_empty() {
                w.write_record(FIELDS)?;
            }
            for r in rows {
                w.serialize(r)?;
            }
            w.flush()
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, rows)?;
            out.write_all(b"\n")
        }
    }
}

/// The CSV header, written by hand when there is no row to take it from.
const FIELDS: &[&str] = &[
    "suite",
    "version",
    "date",
    "commit",
    "cell",
    "scenario",
    "users",
    "rate",
    "size_bytes",
    "delay_ms",
    "protocol",
    "repeat",
    "metric",
    "value",
    "unit",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_json() {
        let row = ExportRow {
            suite: "s".into(),
            version: "1.0".into(),
            date: "2026-11-26T16:00:00Z".into(),
            commit: None,
            cell: "proxy_u10_s50_d0".into(),
            scenario: "proxy".into(),
            users: 10,
            rate: None,
            size_bytes: 50,
            delay_ms: 0.0,
            protocol: "h1c".into(),
            repeat: 1,
            metric: "p99".into(),
            value: 1.5,
            unit: "ms".into(),
        };
        let mut out = Vec::new();
        write(std::slice::from_ref(&row), Format::Csv, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            format!(
                "{}\ns,1.0,2026-11-26T16:00:00Z,,proxy_u10_s50_d0,proxy,10,,50,0.0,h1c,1,p99,1.5,ms\n",
                FIELDS.join(",")
            )
        );
        let mut empty = Vec::new();
        write(&[], Format::Csv, &mut empty).unwrap();
        assert_eq!(String::from_utf8(empty).unwrap().trim(), FIELDS.join(","));
        let mut out = Vec::new();
        write(&[row], Format::Json, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["metric"], "p99");
        assert_eq!(v[0]["commit"], serde_json::Value::Null);
    }
}
