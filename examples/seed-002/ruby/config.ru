# Seed 002's Ruby hello world: a bare Rack application, served by Puma (Debian's `puma`
# package; the suite starts it on gatebench's {port}).
HELLO = "Hello World\n".freeze

run ->(_env) { [200, { "content-type" => "text/plain" }, [HELLO]] }
