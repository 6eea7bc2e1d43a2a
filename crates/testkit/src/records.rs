//! Result records for renderer and comparison tests: a complete, valid cell record built from
//! the few figures a test varies, so every test does not spell out the whole record.

use gatebench_model::{
    CellParams, CellRecord, CellStatus, LoadConfigRecord, LoadReport, Model, PhaseReport,
    ResourceSummary, SelfCheck, ToolInfo, SCHEMA_VERSION,
};

/// Parameters of a cell of scenario `scenario` (index `index` in the suite): h1c, no delay,
/// 1 s warm-up and 4 s measurement; the id follows the runner's `NAME_uU_sS_d0_rR` form.
pub fn cell_params(
    scenario: &str,
    title: &str,
    index: u32,
    users: u32,
    size_bytes: u64,
    repeat: u32,
) -> CellParams {
    CellParams {
        id: format!("{scenario}_u{users}_s{size_bytes}_d0_r{repeat}"),
        scenario: scenario.into(),
        title: title.into(),
        scenario_index: index,
        users,
        rate: None,
        program: None,
        size_bytes,
        delay_ms: 0.0,
        protocol: "h1c".into(),
        repeat,
        order: repeat,
        warmup_s: 1.0,
        duration_s: 4.0,
        requests: None,
        kind: Default::default(),
    }
}

/// The load record of a closed-model run of `users` connections POSTing `body_bytes`, with
/// the given phases; `valid` false marks a generator-bound run.
pub fn load_report(
    users: u32,
    body_bytes: u64,
    warmup: Option<PhaseReport>,
    measurement: PhaseReport,
    valid: bool,
) -> LoadReport {
    LoadReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "gatebench".into(),
            version: "0.1.0".into(),
        },
        started_at_unix_ms: 0,
        started_at_unix_us: 0,
        config: LoadConfigRecord {
            url: "http://127.0.0.1:1/".into(),
            method: "POST".into(),
            protocol: "http/1.1".into(),
            model: Model::Closed,
            connections: users,
            streams: 1,
            threads: 2,
            rate: None,
            arrival: None,
            duration_s: Some(4.0),
            requests: None,
            warmup_s: 1.0,
            timeout_ms: 10_000.0,
            connect_timeout_ms: 3_000.0,
            keepalive: true,
            verify: true,
            headers: vec![],
            body_bytes,
            requests_from: None,
        },
        warmup,
        measurement,
        self_check: SelfCheck {
            cpu_user_s: 1.0,
            cpu_sys_s: 1.0,
            cpu_percent: 50.0,
            send_lag: None,
            schedule_kept_percent: None,
            cpu_throttled_s: None,
            warnings: vec![],
        },
        target_warnings: vec![],
        timeline: None,
        classes: None,
        valid,
        shard: None,
        merged: None,
        thresholds: Vec::new(),
        stream: None,
    }
}

/// A finished (`ok`) cell record with its load and the SUT's resource figures, no GC figures.
pub fn cell_record(
    cell: CellParams,
    load: LoadReport,
    sut_warmup: Option<ResourceSummary>,
    sut_measurement: Option<ResourceSummary>,
) -> CellRecord {
    CellRecord {
        schema_version: SCHEMA_VERSION,
        cell,
        status: CellStatus::Ok,
        reason: None,
        started_at_unix_ms: 0,
        finished_at_unix_ms: 0,
        processes: vec![],
        load: Some(load),
        sut_warmup,
        sut_measurement,
        gc_warmup: None,
        gc_measurement: None,
        capacity: None,
        cost: None,
        origin: None,
        events: Vec::new(),
        grpc: None,
        websocket: None,
    }
}
