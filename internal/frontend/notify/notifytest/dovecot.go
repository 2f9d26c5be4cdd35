package notifytest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Dovecot is a throwaway Dovecot IMAP server (Debian's dovecot-imapd,
// installed by scripts/install-mail-test-tools.sh) in a temporary
// directory, on a random loopback port, with one user whose mail is a
// Maildir. Deliver puts a message into it, as a mail server's local
// delivery does.
type Dovecot struct {
	Addr, User, Password string
	dir, maildir         string
	uid, gid             int
	cmd                  *exec.Cmd
	t                    testing.TB
}

// dovecotPath finds the dovecot binary.
func dovecotPath() string {
	if p, err := exec.LookPath("dovecot"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/dovecot"); err == nil {
		return "/usr/sbin/dovecot"
	}
	return ""
}

// StartDovecot starts the server. Without dovecot the test fails under
// CI=true and is skipped, loudly, elsewhere.
func StartDovecot(t testing.TB) *Dovecot {
	t.Helper()
	bin := dovecotPath()
	if bin == "" {
		msg := "dovecot is not installed: run scripts/install-mail-test-tools.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIP (not run): " + msg)
	}
	dir, err := os.MkdirTemp("", "ov-dovecot-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Logf("dovecot's log:\n%s", log)
		}
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil { // Dovecot's own users read the user file
		t.Fatal(err)
	}
	d := &Dovecot{User: "ann", Password: "imap-test-secret", dir: dir, maildir: filepath.Join(dir, "mail", "ann"), t: t}
	// Mail belongs to the user the mail processes run as: this user, or,
	// as root (which Dovecot refuses for mail), its own system user.
	internal, login := "", ""
	d.uid, d.gid = os.Getuid(), os.Getgid()
	if d.uid == 0 {
		u, err := user.Lookup("dovecot")
		if err != nil {
			t.Fatalf("dovecot: no dovecot system user: %v", err)
		}
		d.uid, _ = strconv.Atoi(u.Uid)
		d.gid, _ = strconv.Atoi(u.Gid)
		internal, login = "dovecot", "dovenull"
	} else {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		internal, login = u.Username, u.Username
	}
	for _, sub := range []string{"run", "run/state", "mail/ann/new", "mail/ann/cur", "mail/ann/tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := chownTree(filepath.Join(dir, "mail"), d.uid, d.gid); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(d.User+":{PLAIN}"+d.Password+"::::::\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/run/state
log_path = %[1]s/dovecot.log
instance_name = overseer-test-%[2]d
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = %[3]s
default_internal_group = %[3]s
default_login_user = %[4]s
first_valid_uid = 1
mail_location = maildir:%[1]s/mail/%%u
passdb {
  driver = passwd-file
  args = scheme=PLAIN %[1]s/passwd
}
userdb {
  driver = static
  args = uid=%[5]d gid=%[6]d home=%[1]s/mail/%%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[2]d
  }
  inet_listener imaps {
    port = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
`, dir, port, internal, login, d.uid, d.gid)
	if err := os.WriteFile(filepath.Join(dir, "dovecot.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	d.run("start")
	return d
}

// run starts dovecot on its configuration and waits until it takes
// connections on its port; what is in the failure message.
func (d *Dovecot) run(what string) {
	d.t.Helper()
	d.cmd = exec.Command(dovecotPath(), "-F", "-c", filepath.Join(d.dir, "dovecot.conf"))
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Stop ends its children too
	out := &lockedBuf{}
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
			d.t.Fatalf("dovecot did not %s: %s\n%s", what, out.String(), log)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// Stop kills the server and its processes (connections are cut).
func (d *Dovecot) Stop() {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		_ = d.cmd.Wait()
		d.cmd = nil
	}
}

// Restart starts a stopped server again on the same port.
func (d *Dovecot) Restart() {
	d.t.Helper()
	d.run("start again")
}

// Deliver puts raw (an RFC 5322 message, CRLF line ends) into the
// user's inbox.
func (d *Dovecot) Deliver(raw []byte) {
	d.t.Helper()
	name := fmt.Sprintf("%d.%d.overseer-test", time.Now().UnixNano(), os.Getpid())
	tmp := filepath.Join(d.maildir, "tmp", name)
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		d.t.Fatal(err)
	}
	_ = os.Chown(tmp, d.uid, d.gid)
	if err := os.Rename(tmp, filepath.Join(d.maildir, "new", name)); err != nil {
		d.t.Fatal(err)
	}
}

func chownTree(root string, uid, gid int) error {
	if os.Getuid() != 0 {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, gid)
	})
}
