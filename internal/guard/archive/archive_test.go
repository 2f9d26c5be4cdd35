package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"
)

func sampleTar(t testing.TB, gz bool) []byte {
	var buf bytes.Buffer
	var z *gzip.Writer
	var w *tar.Writer
	if gz {
		z = gzip.NewWriter(&buf)
		w = tar.NewWriter(z)
	} else {
		w = tar.NewWriter(&buf)
	}
	w.WriteHeader(&tar.Header{Name: ".claude/settings.json", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	w.Write([]byte("{}"))
	w.WriteHeader(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"})
	w.Close()
	if z != nil {
		z.Close()
	}
	return buf.Bytes()
}

func TestListsAndBounds(t *testing.T) {
	for _, gz := range []bool{false, true} {
		ms, err := Tar(bytes.NewReader(sampleTar(t, gz)), Limits{Members: 10, Bytes: 1 << 20, Budget: time.Second, KeepData: 10,
			Want: func(n string) bool { return strings.HasSuffix(n, ".json") }})
		if err != nil || len(ms) != 2 || string(ms[0].Data) != "{}" || !ms[0].Kept || ms[1].Kind != Symlink || ms[1].Link != "/etc" {
			t.Fatalf("gz=%v: %+v %v", gz, ms, err)
		}
		// One member allowed: the listing is cut short, and says so.
		if _, err := Tar(bytes.NewReader(sampleTar(t, gz)), Limits{Members: 1, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
			t.Fatalf("gz=%v: a listing past its member bound: %v", gz, err)
		}
	}
	// A bomb: more bytes after decompression than the bound.
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	w := tar.NewWriter(z)
	w.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: 8 << 20, Typeflag: tar.TypeReg})
	w.Write(make([]byte, 8<<20))
	w.Close()
	z.Close()
	if _, err := Tar(bytes.NewReader(buf.Bytes()), Limits{Members: 10, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
		t.Fatalf("a listing past its byte bound: %v", err)
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for i := 0; i < 5; i++ {
		zw.Create("f" + string(rune('a'+i)))
	}
	zw.Close()
	if _, err := Zip(bytes.NewReader(zb.Bytes()), int64(zb.Len()), Limits{Members: 3, Bytes: 1 << 20, Budget: time.Second}); !errors.Is(err, ErrBound) {
		t.Fatalf("a zip past its member bound: %v", err)
	}
	if ms, err := Zip(bytes.NewReader(zb.Bytes()), int64(zb.Len()), DefaultLimits); err != nil || len(ms) != 5 {
		t.Fatalf("zip: %v %v", ms, err)
	}
	if _, err := Tar(bytes.NewReader(append([]byte{0x28, 0xb5, 0x2f, 0xfd}, make([]byte, 600)...)), DefaultLimits); !errors.Is(err, ErrUnreadable) {
		t.Fatalf("zstd: %v", err)
	}
}

func FuzzList(f *testing.F) {
	f.Add(sampleTar(f, false))
	f.Add(sampleTar(f, true))
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create(".claude/settings.json")
	w.Write([]byte("{}"))
	zw.Close()
	f.Add(zb.Bytes())
	lim := Limits{Members: 100, Bytes: 1 << 20, Budget: 200 * time.Millisecond, KeepData: 1 << 10, Want: func(string) bool { return true }}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ms, err := Tar(bytes.NewReader(b), lim); len(ms) > lim.Members || err == nil && len(ms) == 0 {
			t.Fatalf("tar: %d members, %v", len(ms), err)
		}
		if ms, err := Zip(bytes.NewReader(b), int64(len(b)), lim); len(ms) > lim.Members || err == nil && len(ms) > 0 && len(ms[0].Data) > int(lim.KeepData)+1 {
			t.Fatalf("zip: %d members, %v", len(ms), err)
		}
	})
}
