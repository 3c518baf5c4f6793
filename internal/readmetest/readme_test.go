package readmetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// block is one fenced Go block of a README.
type block struct {
	file   string // path from the module root
	line   int    // line of the block's first line of code
	marker string // the readme comment before the fence, without "<!-- readme:" and "-->"
	code   string
}

var markerLine = regexp.MustCompile(`^<!--\s*readme:\s*(.*?)\s*-->$`)

// goBlocks returns the Go blocks of the README at root/file.
func goBlocks(root, file string) ([]block, error) {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	var blocks []block
	var marker string
	var cur *block
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case strings.TrimSpace(line) == "```go":
			cur = &block{file: file, line: n + 1, marker: marker}
			marker = ""
		case markerLine.MatchString(strings.TrimSpace(line)):
			marker = markerLine.FindStringSubmatch(strings.TrimSpace(line))[1]
		case strings.TrimSpace(line) != "":
			marker = ""
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the Go block is not closed", file, cur.line-1)
	}
	return blocks, sc.Err()
}

// readmes returns every README.md under root and every page of docs/, as
// paths from root, skipping the directories the go tool ignores.
func readmes(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if name == "README.md" || (strings.HasPrefix(rel, "docs/") && strings.HasSuffix(name, ".md")) {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// check verifies blocks: quoted blocks against their files, and every
// other block by building it with go vet in a directory under work, which
// must lie inside the module. It returns one error per failing block, or
// per go vet run, naming the README lines.
func check(root, work string, blocks []block) []error {
	var errs []error
	var pkgs []string
	for i, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		verb, arg, _ := strings.Cut(b.marker, " ")
		var src string
		switch {
		case verb == "from":
			text, err := os.ReadFile(filepath.Join(root, arg))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: the block is quoted from %s: %v", where, arg, err))
			} else if !strings.Contains(string(text), b.code) {
				errs = append(errs, fmt.Errorf("%s: the block is not a piece of %s any more: copy it from there again", where, arg))
			}
			continue
		case verb == "harness":
			h, err := os.ReadFile(filepath.Join(root, "internal", "readmetest", "testdata", "harness", arg+".go"))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: harness %q: %v", where, arg, err))
				continue
			}
			before, after, ok := strings.Cut(string(h), "\t// README block\n")
			if !ok {
				errs = append(errs, fmt.Errorf("%s: harness %q has no \"// README block\" line", where, arg))
				continue
			}
			harness := filepath.Join(root, "internal", "readmetest", "testdata", "harness", arg+".go")
			src = before + fmt.Sprintf("//line %s:%d\n", filepath.Join(root, b.file), b.line) + b.code +
				fmt.Sprintf("//line %s:%d\n", harness, strings.Count(before, "\n")+2) + after
		case b.marker == "" && strings.HasPrefix(b.code, "package "):
			src = fmt.Sprintf("//line %s:%d\n", filepath.Join(root, b.file), b.line) + b.code
		default:
			errs = append(errs, fmt.Errorf("%s: a Go block that is not a complete file needs a <!-- readme: harness NAME --> or <!-- readme: from FILE --> line before it (marker %q)", where, b.marker))
			continue
		}
		dir := filepath.Join(work, fmt.Sprintf("b%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return append(errs, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			return append(errs, err)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return append(errs, err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
	}
	if len(pkgs) == 0 {
		return errs
	}
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("go vet of the README blocks: %v\n%s", err, out))
	}
	return errs
}

// workDir returns a new directory inside the module, removed after the
// test. Its name begins with "_", so "./..." patterns never include it.
func workDir(t *testing.T, root string) string {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(root, "internal", "readmetest"), "_blocks-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestEveryGoBlockOfEveryReadmeCompiles(t *testing.T) {
	root := moduleRoot(t)
	files, err := readmes(root)
	if err != nil {
		t.Fatal(err)
	}
	var all []block
	for _, f := range files {
		blocks, err := goBlocks(root, f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, blocks...)
	}
	if len(all) < 6 {
		t.Errorf("found %d Go blocks in %v; the README alone has more", len(all), files)
	}
	if !slices.Contains(files, "docs/lambda.md") {
		t.Errorf("the pages of docs/ are not checked: found %v", files)
	}
	for _, err := range check(root, workDir(t, root), all) {
		t.Error(err)
	}
}

func TestABlockThatStopsCompilingFailsWithItsReadmeLine(t *testing.T) {
	root := moduleRoot(t)
	work := workDir(t, root)
	readme := "```go\npackage main\n\nfunc main() {\n\tundefinedThing()\n}\n```\n\n<!-- readme: harness client -->\n```go\nc := client.New(nil)\n```\n"
	dir := filepath.Join(work, "readme")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, filepath.Join(dir, "README.md"))
	blocks, err := goBlocks(root, filepath.ToSlash(rel))
	if err != nil || len(blocks) != 2 {
		t.Fatalf("blocks %v, %v; want 2", blocks, err)
	}
	errs := check(root, filepath.Join(work, "build"), blocks)
	msg := fmt.Sprint(errors.Join(errs...))
	for _, want := range []string{rel + ":5:", "undefined: undefinedThing", rel + ":11:", "declared and not used: c"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
}

func TestAFragmentWithoutAHarnessAndAQuoteThatDriftedFail(t *testing.T) {
	root := moduleRoot(t)
	blocks := []block{
		{file: "README.md", line: 3, code: "x := 1\n"},
		{file: "README.md", line: 9, marker: "from examples/quickstart/main.go", code: "func notInTheFile() {}\n"},
	}
	errs := check(root, workDir(t, root), blocks)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want 2", errs)
	}
	if !strings.Contains(errs[0].Error(), "README.md:3: a Go block that is not a complete file needs") {
		t.Errorf("fragment: %v", errs[0])
	}
	if !strings.Contains(errs[1].Error(), "README.md:9: the block is not a piece of examples/quickstart/main.go") {
		t.Errorf("quote: %v", errs[1])
	}
}
