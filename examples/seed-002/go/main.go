// Seed 002's Go hello world: the standard library's net/http alone, no framework, with the
// seed's server timeouts (read and write 5 s, idle 30 s) and the response body allocated once.
// Listens on 127.0.0.1:-port (gatebench's {port}).
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"
)

var helloWorld = []byte("Hello World\n")

func hello(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write(helloWorld)
}

func main() {
	port := flag.Int("port", 8080, "port to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/", hello)
	srv := &http.Server{
		Addr:         fmt.Sprintf("127.0.0.1:%d", *port),
		Handler:      mux,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		IdleTimeout:  30 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
