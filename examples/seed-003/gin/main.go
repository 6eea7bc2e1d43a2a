// The seed-003 service on gin: hello world, a 10 KB JSON document and an error, as the seed's
// gin program serves them (gin.New(), no logger), on 127.0.0.1:-port.
package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gin-gonic/gin"
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

	gin.SetMode(gin.ReleaseMode)
	router := gin.New()
	router.GET("/hello", func(c *gin.Context) {
		c.String(200, "Hello, World!")
	})
	router.GET("/json", func(c *gin.Context) {
		c.JSON(200, &HelloWord{Content: content, Size: 100, Price: 10.12, VIP: true})
	})
	// The seed's error endpoint: an error turned into a response by the framework.
	router.GET("/error", func(c *gin.Context) {
		c.JSON(500, gin.H{"message": "abcd"})
	})
	if err := router.Run(fmt.Sprintf("127.0.0.1:%d", *port)); err != nil {
		panic(err)
	}
}
