package shell

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/action"
)

// FuzzAnalyze checks that no input makes the analysis panic, and that it
// fails closed: input that does not parse is never below approve, block
// findings are hard, and the level is the strictest finding's.
func FuzzAnalyze(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.command)
	}
	for _, s := range []string{
		"", "(", "$(", "'", `"`, "{", "}", "<<EOF", "cat <<EOF\n$(rm -rf /)\nEOF", "a=(1 2); ${a[@]}",
		"${x:?}", "$((1+))", "[[ -f ]]", "case", "for", "function", "coproc x { y; }", "f() { f; }; f",
		"echo {1..1000000}", "rm -rf /{a..z}{a..z}{a..z}", "sh -c 'sh -c \"sh -c x\"'",
		"eval eval eval eval eval eval eval eval rm -rf /", "\x00", "rm -rf \xff/",
		// Static expansion, static text and decoders (expand.go, static.go).
		"x=a; echo ${x//[/}", "x=a; echo ${x%[}", "x=ab; echo ${x/#/b} ${x/%/c} ${x:1:-9} ${x: -1}",
		"printf '%' | sh", "printf '\\777%d' x | sh", "echo ==== | base64 -d | sh", "echo zz | xxd -r -p | sh",
		"echo x | tr 'z-a' x | sh", "echo \"'\" | xargs rm", "IFS=; x='a b'; $x", "IFS=$'\\n'; x=$'rm\\n-rf\\n/'; $x",
		"set --; shift 5; rm \"$1\"", "f(){ f \"$@\"; }; f /", "ln -s r r; rm -rf r/x", "ln -s a b; ln -s b a; rm -rf a/",
		"a=(); rm -rf \"${a[@]}\" \"${a[9]}\"", "x=y; y=x; echo ${!x} ${!y}", "echo $(echo $(echo $(echo /)))",
		// Wrappers, containers, Windows forms and inline code (foreign.go, inline.go).
		"parallel ::: 'rm -rf /'", "parallel -I", "docker run -v : img rm", "docker run --mount type=bind img",
		"docker run -v /:/h -w /h img sh -c 'cd .. && rm -rf *'", "tar --to-command", "del /s", "format",
		"python3 -c 'system(`'", "python3 -c 'os.system(\"'", "perl -e '`rm -rf /`'", "awk 'BEGIN{system(",
		"while :; do : & done", "until false; do x & done",
		// Planted files and unseen writes (planted.go, unseen.go).
		"printf '!`rm -rf ~`' > .claude/commands/x.md", "echo '{\"runOn\":\"folder\\u004fpen\"' > .vscode/tasks.json",
		"echo '!`echo \"!`x`\" > .claude/commands/y.md`' > .claude/commands/x.md", "cp -r a .claude", "tar xf t -C .vscode",
		"git -C a -C b clone u && a/b/u/x", "git clone", "git -C", "7z x -o && ./x", "gunzip -S .z a.z && ./a", "gzip -d .gz",
		"rsync -a h: . && ./x", "scp :x y", "docker cp c: d", "curl -J -O", "wget -r -P", "cp -t", "mv a",
		"python3 -m zipfile -e", "python3 -m tarfile -e a b && b/x", "unzip -l a && ./a", "cpio -i -D && ./x",
		// Later-run configuration and trees changed by git (laterrun.go, unseen.go).
		"echo '{\"scripts\":{\"prepare\":\"rm -rf ~\"}}' > package.json", "echo '{\"git.path\":\"./g\"}' > .vscode/settings.json",
		"printf 'prompt=\"!{x}\"' > .gemini/commands/a.toml", "git checkout -- && make", "git -C && make", "git stash && ./x", "patch -d && make",
	} {
		f.Add(s)
	}
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: emptyFS(f)}
	f.Fuzz(func(t *testing.T, cmd string) {
		an := Analyze(cmd, env)
		var strict action.Level
		for _, fd := range an.Findings {
			if fd.Check == "shell.internal-error" {
				t.Fatalf("analysis panicked on %q: %s", cmd, fd.Message)
			}
			if !fd.Level.Valid() {
				t.Fatalf("finding %s has invalid level %d", fd.Check, fd.Level)
			}
			if fd.Level == action.Block && !fd.Hard {
				t.Fatalf("block finding %s is not hard", fd.Check)
			}
			strict = max(strict, fd.Level)
		}
		if an.Level != strict || !an.Level.Valid() {
			t.Fatalf("level %s is not the strictest finding's %s", an.Level, strict)
		}
		if an.ParseFailed && an.Level < action.Approve {
			t.Fatalf("unparseable input %q judged %s", cmd, an.Level)
		}
		if len(an.Segments) > maxSegments {
			t.Fatalf("%d segments", len(an.Segments))
		}
		for _, s := range an.Segments {
			if s.Name == "" && s.Level < action.Confirm {
				t.Fatalf("segment without a name judged %s: %+v", s.Level, s)
			}
		}
	})
}

// FuzzParseConfig checks that decoding never panics and that a config it
// accepts builds a guard.
func FuzzParseConfig(f *testing.F) {
	f.Add(defaultRulesYAML)
	f.Add([]byte(`{"read_only": ["x y"], "patterns": [{"command": "a b", "level": "approve", "check": "c", "message": "m"}]}`))
	f.Add([]byte("wrappers:\n- {name: w, value_options: [-u], operands: 1}\n"))
	f.Add([]byte("secret_paths: ['~/.x/', '/etc/y', '*.z']\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if _, err := New(c); err != nil {
			t.Fatalf("ParseConfig accepted a config New rejects: %v", err)
		}
	})
}

// FuzzSedScript checks the sed script scanner on arbitrary scripts.
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{"s/a/b/g", "1e ls", "s/x/y/w out", "/re/d", `\,x,p`, "y/abc/xyz/", "1,5{p;d}", "s/a", "$!N", "1r ~/.ssh/id_rsa", "w /tmp/x\np"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sc string) {
		runs, _, writes := sedScan(sc)
		if len(writes) > 0 && !runs {
			t.Fatalf("%q writes %q but is not reported as writing", sc, writes)
		}
	})
}

// FuzzSQLWrites checks the SQL statement classifier: it never panics, and a
// text with a write keyword is never a read.
func FuzzSQLWrites(f *testing.F) {
	for _, s := range []string{"SELECT 1", "drop table x", "WITH a AS (DELETE FROM t) SELECT 1", `\dt`, ".tables", "/* x */ SELECT 1 -- y", "pragma x=1", ";;;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		w := sqlWrites(sql)
		words := strings.FieldsFunc(stripSQLComments(sql), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ';' || r == '('
		})
		if len(words) > 0 && !w {
			switch strings.ToLower(words[0]) {
			case "insert", "update", "delete", "drop", "alter", "create", "truncate", "grant":
				t.Fatalf("%q classified as a read", sql)
			}
		}
	})
}

// FuzzANSIC checks the $'…' decoder: it never panics and never grows the
// text by more than the escapes allow.
func FuzzANSIC(f *testing.F) {
	for _, s := range []string{`\x72\x6d`, `\u00e9`, `\U0001F600`, `\101`, `\c`, `\`, `\x`, `\777`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := ansiC(s)
		if len(out) > 4*len(s)+4 {
			t.Fatalf("%q decoded to %d bytes", s, len(out))
		}
		_ = utf8.ValidString(out)
	})
}
