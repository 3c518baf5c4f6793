// Command zipbootstrap packs a Lambda bootstrap binary into a deployment
// zip, with the executable bit set, without needing a zip tool:
//
//	go run ./internal/tools/zipbootstrap -in dist/payments/bootstrap -out dist/payments.zip
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	in := flag.String("in", "", "bootstrap binary")
	out := flag.String("out", "", "zip to write")
	flag.Parse()
	if *in == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := pack(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "zipbootstrap:", err)
		os.Exit(1)
	}
}

func pack(in, out string) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, src)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
