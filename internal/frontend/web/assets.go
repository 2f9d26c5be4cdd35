package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The console's files (assets/: its pages, and under assets/static/ its
// scripts, style and icon) are built into the binary gzip-compressed, each
// file X as X.gz next to it, a quarter of their size; the sources are what
// people edit. TestEmbeddedAssets checks that each .gz holds its source;
// after editing one, regenerate them:
//
//go:generate go test -run ^TestEmbeddedAssets$ -update-assets .

//go:embed assets/*.gz assets/static/*.gz
var assetsGz embed.FS

// asset returns the content of the console's file name ("assets/app.tmpl").
func asset(name string) ([]byte, error) {
	gz, err := assetsGz.ReadFile(name + ".gz")
	if err != nil {
		return nil, err
	}
	return gunzip(gz)
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return b, zr.Close()
}

// staticFile is one file of assets/static: served as stored to a client
// that accepts gzip, decompressed (once) for one that does not.
type staticFile struct {
	name  string
	gz    []byte
	plain func() ([]byte, error)
}

// staticFiles serves assets/static.
type staticFiles map[string]*staticFile

func loadStatic() (staticFiles, error) {
	const dir = "assets/static"
	ents, err := assetsGz.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := staticFiles{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".gz")
		if !ok || e.IsDir() {
			continue
		}
		gz, err := fs.ReadFile(assetsGz, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[name] = &staticFile{name: name, gz: gz, plain: sync.OnceValues(func() ([]byte, error) { return gunzip(gz) })}
	}
	return files, nil
}

// ServeHTTP serves the file named by the path's last element under
// Prefix+"static/".
func (s staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := s[strings.TrimPrefix(r.URL.Path, Prefix+"static/")]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Add("Vary", "Accept-Encoding")
	body := f.gz
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
	} else {
		b, err := f.plain()
		if err != nil {
			http.Error(w, "the file cannot be read", http.StatusInternalServerError)
			return
		}
		body = b
	}
	// The type is the source's (the name without .gz); the files change
	// only with the binary, so there is no modification time.
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header's values list
// gzip (or *) without q=0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(p, "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}
