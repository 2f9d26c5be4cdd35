package web

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateAssets = flag.Bool("update-assets", false, "rewrite the .gz of each file of assets/ from it")

// assetSources lists the console's files: every file of assets/ and
// assets/static/ but the generated .gz.
func assetSources(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"assets", "assets/static"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if !e.IsDir() && !strings.HasSuffix(e.Name(), ".gz") {
				out = append(out, dir+"/"+e.Name())
			}
		}
	}
	return out
}

// TestEmbeddedAssets checks that the binary's compressed files are the
// sources in assets/, every one of them and no other.
func TestEmbeddedAssets(t *testing.T) {
	srcs := assetSources(t)
	if *updateAssets {
		gzs, _ := filepath.Glob("assets/*.gz")
		more, _ := filepath.Glob("assets/static/*.gz")
		for _, f := range append(gzs, more...) {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for _, src := range srcs {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // no name, no time: the same bytes each run
			zw.Write(b)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src+".gz", buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	const regen = "run `go generate ./internal/frontend/web`"
	var embedded []string
	for _, dir := range []string{"assets", "assets/static"} {
		ents, err := assetsGz.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".gz"); ok {
				embedded = append(embedded, dir+"/"+name)
			}
		}
	}
	slices.Sort(embedded)
	slices.Sort(srcs)
	if !slices.Equal(embedded, srcs) {
		t.Fatalf("compressed files %q, sources %q: %s", embedded, srcs, regen)
	}
	for _, src := range srcs {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := asset(src); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s.gz is not %s (%v): %s", src, src, err, regen)
		}
	}
}

// A static file goes compressed to a client that accepts gzip, plain to
// one that does not, with its type either way.
func TestStaticFilesEncoding(t *testing.T) {
	files, err := loadStatic()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("assets/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		accept string
		gz     bool
	}{
		{"", false},
		{"gzip", true},
		{"br, gzip;q=0.8, deflate", true},
		{"*", true},
		{"identity", false},
		{"gzip;q=0", false},
		{"gzip; q=0.000, br", false},
		{"deflate, br", false},
	} {
		r := httptest.NewRequest("GET", Prefix+"static/app.js", nil)
		if tc.accept != "" {
			r.Header.Set("Accept-Encoding", tc.accept)
		}
		w := httptest.NewRecorder()
		files.ServeHTTP(w, r)
		res := w.Result()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") ||
			res.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%q: %d %q, Vary %q", tc.accept, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Vary"))
		}
		if gz := res.Header.Get("Content-Encoding") == "gzip"; gz != tc.gz {
			t.Errorf("%q: gzip %v, want %v", tc.accept, gz, tc.gz)
		}
		if tc.gz {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%q: %v", tc.accept, err)
			}
			body, _ = io.ReadAll(zr)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("%q: the body is not app.js (%d bytes)", tc.accept, len(body))
		}
	}
	for _, p := range []string{"missing.js", "", "../app.tmpl", "app.js.gz"} {
		w := httptest.NewRecorder()
		files.ServeHTTP(w, httptest.NewRequest("GET", Prefix+"static/"+p, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", p, w.Code)
		}
	}
}
