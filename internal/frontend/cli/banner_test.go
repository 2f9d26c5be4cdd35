package cli

import (
	"strings"
	"testing"
)

// A daemon that listens on loopback only prints no QR code: no phone can
// reach that address.
func TestConsoleBannerQROnlyOffLoopback(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:7777", "http://localhost:7777", "http://[::1]:7777"} {
		b := consoleBanner(base, true, false)
		if !strings.Contains(b, "console:   "+base+"/ui/") || !strings.Contains(b, "no QR code") || strings.Count(b, "\n") > 3 {
			t.Errorf("%s:\n%s", base, b)
		}
	}
	b := consoleBanner("https://192.168.1.20:7777", true, false)
	if !strings.Contains(b, "scan to open") || strings.Count(b, "\n") < 10 {
		t.Errorf("a network address gets a QR code:\n%s", b)
	}
	if b := consoleBanner("https://192.168.1.20:7777", false, false); strings.Contains(b, "scan") {
		t.Errorf("OVERSEER_NO_QR:\n%s", b)
	}
}
