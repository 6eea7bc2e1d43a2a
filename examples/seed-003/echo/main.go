// The seed-003 service on Echo (github.com/labstack/echo/v4), standing in for elton, which the
// Go module proxy does not serve: hello world, a 10 KB JSON document and an error turned into a
// response by the framework's error handler, on 127.0.0.1:-port.
package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"
)

// HelloWord is the seed's document; its Content makes it about 10 KB of JSON.
type HelloWord struct {
	Content string  `json:"content,omitempty"`
	Size    int     `json:"size,omitempty"`
	Price   float32 `json:"price,omitempty"`
	VIP     bool    `json:"vip,omitempty"`
}

func main() {
	port := flag.Int("port", 3000, "port to listen on (127.0.0.1)")
	flag.Parse()
	arr := make([]string, 0, 100)
	for i := 0; i < 100; i++ {
		arr = append(arr, "花褪残红青杏小。燕子飞时,绿水人家绕。枝上柳绵吹又少,天涯何处无芳草!")
	}
	content := strings.Join(arr, "\n")

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.GET("/hello", func(c echo.Context) error {
		return c.String(200, "Hello, World!")
	})
	e.GET("/json", func(c echo.Context) error {
		return c.JSON(200, &HelloWord{Content: content, Size: 100, Price: 10.12, VIP: true})
	})
	// As elton's error middleware does: the handler returns an error, the framework answers.
	e.GET("/error", func(c echo.Context) error {
		return echo.NewHTTPError(500, "abcd")
	})
	if err := e.Start(fmt.Sprintf("127.0.0.1:%d", *port)); err != nil {
		panic(err)
	}
}
