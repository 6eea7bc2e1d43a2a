//! The balancer: exact round robin, dead and hanging upstreams, health checks, ejection, 503.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatebench_services::{BalanceConfig, EjectionConfig, HealthConfig, ProxyConfig};

use crate::support::*;

fn health(interval_ms: u64) -> HealthConfig {
    HealthConfig {
        interval: Duration::from_millis(interval_ms),
        timeout: Duration::from_millis(500),
        ..HealthConfig::default()
    }
}

fn balance_config(upstreams: Vec<String>) -> BalanceConfig {
    BalanceConfig {
        proxy: ProxyConfig {
            upstreams,
            ..proxy_config(String::new())
        },
        health: Some(health(100)),
        ejection: Some(EjectionConfig::default()),
    }
}

/// Polls the balancer's health endpoint until it reports `eligible` upstreams.
async fn wait_eligible(balancer: &Running, eligible: usize) {
    let want = format!("{eligible} of ");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let answer = balancer
            .connect()
            .await
            .request(b"GET /__gatebench/health HTTP/1.1\r\nHost: a\r\n\r\n")
            .await;
        if String::from_utf8_lossy(&answer.body).starts_with(&want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never reached {eligible} eligible"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn round_robin_is_exact_when_all_are_healthy_and_checks_do_not_count() {
    let mut upstreams = Vec::new();
    for _ in 0..5 {
        upstreams.push(Capture::start(Reply::Health(Arc::new(AtomicU16::new(200)))).await);
    }
    let balancer =
        Running::balance(balance_config(upstreams.iter().map(Capture::url).collect())).await;
    for _ in 0..5 {
        let mut conn = balancer.connect().await;
        for _ in 0..10 {
            assert_eq!(conn.request(&post("/", b"rr")).await.status, 200);
        }
    }
    let counts: Vec<usize> = upstreams.iter().map(Capture::requests).collect();
    assert_eq!(counts, [10; 5], "exact round robin");
    // Checks run every 30 ms: wait for one on every upstream rather than a fixed sleep.
    let deadline = Instant::now() + PATIENCE;
    while !upstreams
        .iter()
        .all(|u| u.health_checks.load(Ordering::SeqCst) > 0)
    {
        assert!(Instant::now() < deadline, "every upstream is checked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstreams.iter().map(Capture::requests).sum::<usize>(), 50);
    balancer.stop().await;
}

#[tokio::test]
async fn a_dead_upstream_costs_no_client_errors() {
    let mut live = Vec::new();
    for _ in 0..4 {
        live.push(Capture::start(Reply::Ok).await);
    }
    let mut urls: Vec<String> = live.iter().map(Capture::url).collect();
    let (refused, _held) = refused_url();
    urls.insert(2, refused);
    let balancer = Running::balance(BalanceConfig {
        health: None,
        ..balance_config(urls)
    })
    .await;
    let mut conn = balancer.connect().await;
    for i in 0..40 {
        let answer = if i % 2 == 0 {
            conn.request(GET).await
        } else {
            // Connect failures are retried for any method: nothing was sent.
            conn.request(&post("/", b"p")).await
        };
        assert_eq!(answer.status, 200, "request {i}: {answer:?}");
    }
    assert_eq!(live.iter().map(Capture::requests).sum::<usize>(), 40);
    // Passive ejection took it out.
    wait_eligible(&balancer, 4).await;
    balancer.stop().await;
}

#[tokio::test]
async fn a_hanging_upstream_never_gets_a_post_twice_and_gets_are_retried() {
    let ok1 = Capture::start(Reply::Ok).await;
    let hang = Capture::start(Reply::Hang).await;
    let ok2 = Capture::start(Reply::Ok).await;
    let mut config = balance_config(vec![ok1.url(), hang.url(), ok2.url()]);
    config.health = None;
    config.ejection = None;
    config.proxy.timeouts.response = Duration::from_millis(400);
    let balancer = Running::balance(config).await;
    let mut conn = balancer.connect().await;
    let mut timeouts = 0;
    for i in 0..6 {
        let answer = conn
            .request(&post("/", format!("marker-{i}-end").as_bytes()))
            .await;
        match answer.status {
            200 => {}
            504 => timeouts += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(
        timeouts, 2,
        "the POSTs that reached the hanging upstream time out"
    );
    let everything = [ok1.all_bytes(), hang.all_bytes(), ok2.all_bytes()].concat();
    for i in 0..6 {
        let marker = format!("marker-{i}-end");
        let seen = everything
            .windows(marker.len())
            .filter(|w| *w == marker.as_bytes())
            .count();
        assert_eq!(seen, 1, "{marker} was sent {seen} times");
    }
    // GETs can be sent again: the one that lands on the hanging upstream goes to the next.
    for _ in 0..3 {
        assert_eq!(conn.request(GET).await.status, 200);
    }
    balancer.stop().await;
}

#[tokio::test]
async fn health_checks_take_an_upstream_out_and_bring_it_back() {
    let cells: Vec<Arc<AtomicU16>> = (0..3).map(|_| Arc::new(AtomicU16::new(200))).collect();
    let mut upstreams = Vec::new();
    for cell in &cells {
        upstreams.push(Capture::start(Reply::Health(cell.clone())).await);
    }
    let balancer = Running::balance(BalanceConfig {
        health: Some(health(50)),
        ..balance_config(upstreams.iter().map(Capture::url).collect())
    })
    .await;
    cells[1].store(500, Ordering::SeqCst);
    wait_eligible(&balancer, 2).await;
    let before: Vec<usize> = upstreams.iter().map(Capture::requests).collect();
    let mut conn = balancer.connect().await;
    for _ in 0..30 {
        assert_eq!(conn.request(GET).await.status, 200);
    }
    let after: Vec<usize> = upstreams.iter().map(Capture::requests).collect();
    let delta: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(
        delta,
        [15, 0, 15],
        "an upstream that is down gets nothing, the rest share evenly"
    );
    cells[1].store(200, Ordering::SeqCst);
    wait_eligible(&balancer, 3).await;
    for _ in 0..30 {
        assert_eq!(conn.request(GET).await.status, 200);
    }
    let last: Vec<usize> = upstreams.iter().map(Capture::requests).collect();
    let delta: Vec<usize> = last.iter().zip(&after).map(|(a, b)| a - b).collect();
    assert_eq!(delta, [10, 10, 10]);
    balancer.stop().await;
}

#[tokio::test]
async fn nothing_eligible_is_503_at_once() {
    let cell = Arc::new(AtomicU16::new(503));
    let a = Capture::start(Reply::Health(cell.clone())).await;
    let b = Capture::start(Reply::Health(cell.clone())).await;
    let balancer = Running::balance(BalanceConfig {
        health: Some(health(30)),
        ..balance_config(vec![a.url(), b.url()])
    })
    .await;
    wait_eligible(&balancer, 0).await;
    let mut conn = balancer.connect().await;
    let started = Instant::now();
    let answer = conn.request(&post("/", b"x")).await;
    assert_eq!(answer.status, 503);
    assert!(answer
        .header("proxy-status")
        .unwrap()
        .contains("destination_unavailable"));
    // At once: well under the 2 s connect timeout that trying an upstream could cost (the
    // upstreams here answer requests 200, so a request that reached one shows in the status).
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let health = conn
        .request(b"GET /__gatebench/health HTTP/1.1\r\nHost: a\r\n\r\n")
        .await;
    assert_eq!(health.status, 503);
    assert_eq!(a.requests() + b.requests(), 0);
    balancer.stop().await;
}
