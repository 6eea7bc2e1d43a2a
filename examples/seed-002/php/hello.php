<?php
// Seed 002's PHP hello world, served by PHP's built-in web server (`php -S`, the suite starts
// it with PHP_CLI_SERVER_WORKERS), the only PHP HTTP server Debian packages: every request
// runs this script.
header('Content-Type: text/plain');
echo "Hello World\n";
