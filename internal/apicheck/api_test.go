package apicheck

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api.txt from the code")

// surface returns the exported API of the non-test Go files in dir,
// package name pkg, one declaration per line, sorted.
func surface(t *testing.T, fset *token.FileSet, dir, pkg string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	node := func(n any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	add := func(format string, args ...any) { lines = append(lines, pkg+": "+fmt.Sprintf(format, args...)) }
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				recv := ""
				if d.Recv != nil {
					if !exportedRecv(d.Recv.List[0].Type) {
						continue
					}
					recv = "(" + node(d.Recv.List[0].Type) + ") "
				}
				add("func %s%s%s", recv, d.Name.Name, strings.TrimPrefix(node(d.Type), "func"))
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								typ := ""
								if s.Type != nil {
									typ = " " + node(s.Type)
								}
								add("%s %s%s", d.Tok, n.Name, typ)
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							lines = append(lines, typeLines(pkg, s, node)...)
						}
					}
				}
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// typeLines lists a type: its declaration head, then each exported field
// of a struct or method of an interface on its own line.
func typeLines(pkg string, s *ast.TypeSpec, node func(any) string) []string {
	name := s.Name.Name
	if s.TypeParams != nil {
		var params []string
		for _, f := range s.TypeParams.List {
			var names []string
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
			params = append(params, strings.Join(names, ", ")+" "+node(f.Type))
		}
		name += "[" + strings.Join(params, ", ") + "]"
	}
	head := pkg + ": type " + name
	if s.Assign.IsValid() {
		head += " ="
	}
	var fields *ast.FieldList
	switch t := s.Type.(type) {
	case *ast.StructType:
		head, fields = head+" struct", t.Fields
	case *ast.InterfaceType:
		head, fields = head+" interface", t.Methods
	default:
		return []string{head + " " + node(s.Type)}
	}
	lines := []string{head}
	for _, f := range fields.List {
		if len(f.Names) == 0 { // embedded
			n := node(f.Type)
			if base := strings.TrimPrefix(n[strings.LastIndex(n, ".")+1:], "*"); ast.IsExported(base) {
				lines = append(lines, head+", embeds "+n)
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				lines = append(lines, head+", "+n.Name+" "+node(f.Type))
			}
		}
	}
	return lines
}

// packages returns the module's importable packages (not internal, not
// main) as import path and directory.
func packages(t *testing.T) [][2]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Name}} {{.ImportPath}} {{.Dir}}", "github.com/idemkey/idemkey/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	var pkgs [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] == "main" || strings.Contains(f[1], "/internal/") || strings.Contains(f[1], "/examples/") {
			continue
		}
		pkgs = append(pkgs, [2]string{f[1], f[2]})
	}
	return pkgs
}

func TestExportedAPIIsTheCommittedOne(t *testing.T) {
	fset := token.NewFileSet()
	var all []string
	for _, p := range packages(t) {
		name := strings.TrimPrefix(strings.TrimPrefix(p[0], "github.com/idemkey/idemkey"), "/")
		if name == "" {
			name = "idemkey"
		}
		all = append(all, surface(t, fset, p[1], name)...)
	}
	got := strings.Join(all, "\n") + "\n"
	if *update {
		if err := os.WriteFile("api.txt", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("api.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	var added, removed []string
	for _, l := range all {
		if !slices.Contains(wantLines, l) {
			added = append(added, "+ "+l)
		}
	}
	for _, l := range wantLines {
		if !slices.Contains(all, l) {
			removed = append(removed, "- "+l)
		}
	}
	t.Errorf("the exported API differs from internal/apicheck/api.txt; if the change is meant, run go test ./internal/apicheck -update and commit api.txt:\n%s",
		strings.Join(append(removed, added...), "\n"))
}

// The listing names what a user can reach and nothing else, so that a
// new exported field, method or generic parameter changes api.txt.
func TestSurfaceListsExportedIdentifiersOnly(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const A, b = 1, 2

type T struct {
	Exported int
	hidden   int
	*Embedded
}

type Embedded struct{}

type hiddenType struct{ X int }

func (T) M(x int) error        { return nil }
func (T) m()                   {}
func (hiddenType) N()          {}
func G[K comparable](k K) bool { return true }

type I interface{ Do() }
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := surface(t, token.NewFileSet(), dir, "p")
	want := []string{
		"p: const A",
		"p: func (T) M(x int) error",
		"p: func G[K comparable](k K) bool",
		"p: type Embedded struct",
		"p: type I interface",
		"p: type I interface, Do func()",
		"p: type T struct",
		"p: type T struct, Exported int",
		"p: type T struct, embeds *Embedded",
	}
	if !slices.Equal(got, want) {
		t.Errorf("surface:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// undocumented returns the exported declarations of the non-test Go files
// in dir that have no doc comment: funcs and methods (but the methods of
// the standard interfaces error, fmt.Stringer and errors' Is and Unwrap,
// whose behaviour their interfaces state), types, and consts and vars
// outside a documented group.
func undocumented(t *testing.T, fset *token.FileSet, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	standard := map[string]bool{"Error": true, "String": true, "Is": true, "Unwrap": true}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".pb.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		where := func(p token.Pos) string { return fset.Position(p).String() }
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Doc != nil || (d.Recv != nil && standard[d.Name.Name]) {
					continue
				}
				if d.Recv != nil && !exportedRecv(d.Recv.List[0].Type) {
					continue
				}
				out = append(out, where(d.Pos())+": "+d.Name.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
							out = append(out, where(s.Pos())+": "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
								out = append(out, where(n.Pos())+": "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(rt ast.Expr) bool {
	if s, ok := rt.(*ast.StarExpr); ok {
		rt = s.X
	}
	switch ix := rt.(type) {
	case *ast.IndexExpr:
		rt = ix.X
	case *ast.IndexListExpr:
		rt = ix.X
	}
	id, ok := rt.(*ast.Ident)
	return ok && id.IsExported()
}

func TestEveryExportedIdentifierHasADocComment(t *testing.T) {
	fset := token.NewFileSet()
	var missing []string
	for _, p := range packages(t) {
		missing = append(missing, undocumented(t, fset, p[1])...)
	}
	if len(missing) > 0 {
		t.Errorf("%d exported identifiers without a doc comment (say what each does):\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

func TestUndocumentedFindsWhatHasNoDocComment(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// Documented does nothing.
func Documented() {}

func Bare() {}

type T struct{}

func (T) Error() string { return "" }

func (T) Method() {}

// Group of constants.
const (
	A = 1
	B = 2
)

var V = 3

const W = 4 // W is a trailing comment.
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range undocumented(t, token.NewFileSet(), dir) {
		names = append(names, m[strings.LastIndex(m, " ")+1:])
	}
	if want := []string{"Bare", "T", "Method", "V"}; !slices.Equal(names, want) {
		t.Errorf("undocumented: %v, want %v", names, want)
	}
}
