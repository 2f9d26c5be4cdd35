package metrics

import "testing"

const limitsSample = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max address space         unlimited            unlimited            bytes
`

const netstatSample = `TcpExt: SyncookiesSent SyncookiesRecv
TcpExt: 0 0
IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets
IpExt: 0 0 0 0 0 0 12345 678
`

func TestProcParsers(t *testing.T) {
	if v, ok := softLimit(limitsSample, "Max open files"); !ok || v != 1024 {
		t.Errorf("open files = %v, %v", v, ok)
	}
	if v, ok := softLimit(limitsSample, "Max address space"); !ok || v != 18446744073709551615 {
		t.Errorf("address space = %v, %v", v, ok)
	}
	if _, ok := softLimit(limitsSample, "Max nothing"); ok {
		t.Error("a missing limit was found")
	}
	if in, out := ipExt(netstatSample); in != 12345 || out != 678 {
		t.Errorf("ipExt = %v, %v", in, out)
	}
	if in, out := ipExt("IpExt: InOctets\n"); in != 0 || out != 0 {
		t.Errorf("ipExt of a header alone = %v, %v", in, out)
	}
}

// FuzzProcParsers: the /proc readers never panic on any text.
func FuzzProcParsers(f *testing.F) {
	f.Add(limitsSample + netstatSample)
	f.Add("Max open files\nIpExt: a\nIpExt:")
	f.Fuzz(func(t *testing.T, s string) {
		softLimit(s, "Max open files")
		softLimit(s, "Max address space")
		ipExt(s)
	})
}
