package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeImports are what README.md's Go examples use, in one program.
var readmeImports = []string{
	"context", "errors", "fmt", "log", "os/exec", "syscall", "time",
	"github.com/unipoll/unipoll/channel",
	"github.com/unipoll/unipoll/child",
	"github.com/unipoll/unipoll/eventloop",
	"github.com/unipoll/unipoll/poll",
	"github.com/unipoll/unipoll/signal",
	"github.com/unipoll/unipoll/socket",
	"github.com/unipoll/unipoll/timer",
}

// TestReadmeExamples runs README.md's Go examples as written: the blocks
// are pasted, in order, into the body of one main function, built and run.
// The output must be what the comments in them say.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d Go blocks, want the short example, the channel, the timer and the signal and child ones", len(blocks))
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, imp := range readmeImports {
		src.WriteString("\t\"" + imp + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {\n")
	for _, b := range blocks {
		src.Write(b[1])
		src.WriteString("\n")
	}
	src.WriteString("}\n")

	// Inside the module, so that the library resolves to this checkout.
	dir, err := os.MkdirTemp(".", "readme-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "run", "./"+dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run of README.md's examples: %v\n%s\nprogram:\n%s", err, stderr.String(), src.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 14 {
		t.Fatalf("got %d lines, want 14:\n%s", len(lines), stdout.String())
	}
	first := slices.Clone(lines[:2])
	slices.Sort(first)
	// "1 Readable and 2 Readable, then 3 Readable 50ms later", then "a, b,
	// c", then "sooner, then later", then the signal, the child's status
	// read without reaping and what cmd.Wait returned, then a child's
	// output read on the Poll and its cmd.Wait, then the event loop's
	// "echo".
	want := []string{"1 Readable", "2 Readable", "3 Readable", "a", "b", "c", "sooner", "later",
		"user defined signal 1", "signal: terminated", "signal: terminated",
		"hello from a child", "<nil>", "echo"}
	got := append(first, lines[2:]...)
	if !slices.Equal(got, want) {
		t.Fatalf("output:\n%s\nwant (first two in either order):\n%s", stdout.String(), strings.Join(want, "\n"))
	}
}
