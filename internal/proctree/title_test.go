package proctree

import "testing"

func TestTitle(t *testing.T) {
	for cmdline, want := range map[string]string{
		// setproctitle: PostgreSQL and nginx overwrite argv.
		"postgres: walwriter \x00\x00\x00":                   "postgres: walwriter",
		"postgres: app bench [local] UPDATE\x00":             "postgres: app bench [local] UPDATE",
		"nginx: worker process\x00\x00\x00\x00":              "nginx: worker process",
		"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/data": "",
		// Interpreters: the script, the module.
		"python3\x00-u\x00/srv/app.py\x00--port\x008080\x00": "app.py",
		"/usr/bin/python3.11\x00-m\x00http.server\x00":       "http.server",
		"node\x00server.js\x00":                              "server.js",
		"python3\x00-c\x00print(1)\x00":                      "",
		"python3\x00":                                        "",
		// Others keep their comm.
		"fio\x00--name=x\x00--rw=read\x00": "",
		"sh\x00-c\x00sleep 1\x00":          "",
		"":                                 "",
		"evil\x1b[31m title\x00":           "evil[31m title",
	} {
		if got := Title([]byte(cmdline)); got != want {
			t.Errorf("Title(%q) = %q, want %q", cmdline, got, want)
		}
	}
}

// Issue 18: PostgreSQL's processes group by role, every client's backend
// as one.
func TestRole(t *testing.T) {
	for _, c := range []struct{ comm, title, want string }{
		{"postgres", "postgres: walwriter", "postgres: walwriter"},
		{"postgres", "postgres: background writer   ", "postgres: background writer"},
		{"postgres", "postgres: bench bench [local] UPDATE", "postgres: backend"},
		{"postgres", "postgres: bench bench 127.0.0.1(40312) idle in transaction", "postgres: backend"},
		{"nginx", "nginx: worker process", "nginx: worker process"},
		{"python3", "load.py", "load.py"},
		{"fio", "", "fio"},
	} {
		if got := Role(c.comm, c.title, Program(c.comm, c.title)); got != c.want {
			t.Errorf("Role(%q, %q) = %q, want %q", c.comm, c.title, got, c.want)
		}
	}
}
