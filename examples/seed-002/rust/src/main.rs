//! Seed 002's Rust hello world: one Axum route answering `Hello World\n` as text/plain, on
//! 127.0.0.1 at the port given as the only argument (gatebench's `{port}`).

use axum::{routing::get, Router};

#[tokio::main]
async fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("usage: rust-hello PORT");
    let app = Router::new().route("/", get(|| async { "Hello World\n" }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
