//! The transform: JSON request bodies forwarded as XML; hostile JSON refused before the
//! upstream sees it; `no-transform` respected; over HTTP, HTTPS and HTTP/2.

use gatebench_services::json_xml::JsonXmlLimits;
use gatebench_services::{EchoConfig, TransformConfig, UpstreamTls};
use tokio::net::TcpStream;

use crate::support::*;

fn transform_config(upstream: String) -> TransformConfig {
    TransformConfig {
        proxy: proxy_config(upstream),
        json: JsonXmlLimits {
            max_depth: 16,
            max_input: 64 * 1024,
        },
    }
}

fn json_post(content_type: &str, body: &[u8], extra: &str) -> Vec<u8> {
    let mut raw = format!(
        "POST /convert HTTP/1.1\r\nHost: a\r\nContent-Type: {content_type}\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

#[tokio::test]
async fn json_is_forwarded_as_xml_with_its_new_length() {
    let upstream = Capture::start(Reply::Ok).await;
    let transform = Running::transform(transform_config(upstream.url())).await;
    let mut conn = transform.connect().await;
    let answer = conn
        .request(&json_post(
            "application/json",
            br#"{"a":1,"b":["x",true]}"#,
            "",
        ))
        .await;
    assert_eq!(answer.status, 200);
    let seen = String::from_utf8(upstream.all_bytes()).unwrap();
    let (head, body) = seen.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: application/xml\r\n"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", body.len())),
        "{head}"
    );
    assert!(body.starts_with("<?xml"), "{body}");
    assert!(body.contains(r#"<a type="number">1</a>"#), "{body}");
    assert!(body.contains("<item>x</item>"), "{body}");
    // A GET without a body passes as it is.
    assert_eq!(conn.request(GET).await.status, 200);
    transform.stop().await;
}

#[tokio::test]
async fn hostile_json_is_refused_and_never_forwarded() {
    let upstream = Capture::start(Reply::Ok).await;
    let transform = Running::transform(transform_config(upstream.url())).await;
    let deep = "[".repeat(10_000);
    let big = format!("[{}1]", "1,".repeat(40_000));
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (json_post("application/json", b"{\"a\":", ""), 400),
        (json_post("application/json", b"{'a':1}", ""), 400),
        (json_post("application/json", b"", ""), 400),
        (json_post("application/json", b"\"\xff\xfe\"", ""), 400),
        (json_post("application/json", b"\"\\u0000\"", ""), 400),
        (json_post("application/json", deep.as_bytes(), ""), 400),
        (json_post("application/json", big.as_bytes(), ""), 413),
        (json_post("text/plain", b"{}", ""), 415),
        (
            json_post("application/json", b"{}", "Content-Encoding: gzip\r\n"),
            415,
        ),
    ];
    for (raw, status) in cases {
        let mut conn = transform.connect().await;
        let answer = conn.request(&raw).await;
        assert_eq!(
            answer.status,
            status,
            "{}",
            String::from_utf8_lossy(&raw[..raw.len().min(120)])
        );
    }
    assert_eq!(
        upstream.all_bytes(),
        b"",
        "refused JSON reached the upstream"
    );
    transform.stop().await;
}

#[tokio::test]
async fn no_transform_passes_the_body_untouched() {
    let upstream = Capture::start(Reply::Ok).await;
    let transform = Running::transform(transform_config(upstream.url())).await;
    let body = br#"{"keep": "me as json"}"#;
    let answer = transform
        .connect()
        .await
        .request(&json_post(
            "application/json",
            body,
            "Cache-Control: no-transform\r\n",
        ))
        .await;
    assert_eq!(answer.status, 200);
    let seen = String::from_utf8(upstream.all_bytes()).unwrap();
    assert!(seen
        .to_ascii_lowercase()
        .contains("content-type: application/json\r\n"));
    assert!(seen.ends_with(std::str::from_utf8(body).unwrap()), "{seen}");
    transform.stop().await;
}

#[tokio::test]
async fn over_https_and_http2_the_echo_returns_the_xml() {
    let (front, back) = (cert("xform-front"), cert("xform-back"));
    let echo = Running::echo(EchoConfig {
        tls: Some(back.settings.clone()),
        ..echo_config()
    })
    .await;
    let mut config = transform_config(echo.url(true));
    config.proxy.tls = Some(front.settings.clone());
    config.proxy.http2 = true;
    config.proxy.upstream_tls = UpstreamTls {
        insecure: true,
        ..UpstreamTls::default()
    };
    let transform = Running::transform(config).await;
    let mut conn = Conn::new(tls_connect(transform.addr, &front.pem, &[b"http/1.1"]).await);
    let answer = conn
        .request(&json_post("application/json", br#"{"k":"v"}"#, ""))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("application/xml"));
    let xml = String::from_utf8(answer.body).unwrap();
    assert!(xml.contains("<k>v</k>"), "{xml}");
    let mut h2 = H2::handshake(tls_connect(transform.addr, &front.pem, &[b"h2"]).await).await;
    let req = http::Request::post("https://localhost/")
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            b"[1,2]",
        )))
        .unwrap();
    let answer = h2.send_request(req).await;
    assert_eq!(answer.status, 200);
    let xml = String::from_utf8(answer.body.unwrap()).unwrap();
    assert!(xml.contains("<item type=\"number\">2</item>"), "{xml}");
    let _ = TcpStream::connect(transform.addr).await;
    transform.stop().await;
    echo.stop().await;
}
