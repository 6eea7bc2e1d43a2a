# The official gatebench container image: the `gatebench` binary alone on a small Debian base,
# as the Kubernetes Indexed Job of `gatebench k8s` runs it (docs/shards.md).
#
#   docker build -t REGISTRY/gatebench:0.1.0 .
#   docker push REGISTRY/gatebench:0.1.0
#
# Build stage: the toolchain pinned in rust-toolchain.toml (rustup in the rust image installs
# it on first use), the locked dependency versions, a release build of the binary.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p gatebench \
    && install -m 0755 target/release/gatebench /usr/local/bin/gatebench

# Runtime stage: CA certificates for https:// targets (the system trust store), no shell
# needed by gatebench itself, an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/gatebench /usr/local/bin/gatebench
USER 65532:65532
ENTRYPOINT ["gatebench"]
CMD ["--help"]
