package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The function shape every non-test function of the module keeps
// (docs/architecture.md, "Function shape"): a body of at most maxLines
// lines, from its opening brace to its closing one, and at most maxParams
// parameters (the receiver not counted). Past either, split the function
// into named helpers, or gather the parameters into an options struct
// (cli/cli's options struct plus run function, for a command).
const (
	maxLines  = 80
	maxParams = 6
)

// shapeAllowed are the functions that still break the rule, by file and
// name, each with what it waits for. The list only shrinks:
// TestFunctionShape fails when one of them keeps the rule (or is gone),
// so that its line goes with the fix. Add nothing here.
var shapeAllowed = map[string]string{}

// shapeOffender is a function past the rule.
type shapeOffender struct {
	pos    token.Position
	name   string // Func, or Type.Method
	lines  int
	params int
}

func (o shapeOffender) String() string {
	return fmt.Sprintf("%s:%d %s: %d lines (at most %d), %d parameters (at most %d)",
		filepath.ToSlash(o.pos.Filename), o.pos.Line, o.name, o.lines, maxLines, o.params, maxParams)
}

// key is how shapeAllowed names the function.
func (o shapeOffender) key() string { return filepath.ToSlash(o.pos.Filename) + " " + o.name }

// TestFunctionShape walks the module from its root, as the go tool does
// (no testdata, no folder whose name starts with . or _), and fails on each
// non-test function over maxLines lines or maxParams parameters that
// shapeAllowed does not list, and on each listed one that keeps the rule.
func TestFunctionShape(t *testing.T) {
	offenders, funcs := moduleShape(t, ".")
	if funcs < 1000 {
		t.Fatalf("read %d functions: the walk missed the module", funcs)
	}
	seen := map[string]bool{}
	for _, o := range offenders {
		if _, ok := shapeAllowed[o.key()]; ok {
			seen[o.key()] = true
			continue
		}
		t.Errorf("%v: split it into named helpers, or take an options struct", o)
	}
	for _, k := range slices.Sorted(maps.Keys(shapeAllowed)) {
		if !seen[k] {
			t.Errorf("%s keeps the rule now (or is gone): remove it from shapeAllowed", k)
		}
	}
}

// TestFunctionShapeSeesAnOffender: the measure counts a body's lines brace
// to brace and every parameter name, finds methods by Type.Method, and
// lets a function exactly at the limits pass, so TestFunctionShape can
// fail.
func TestFunctionShapeSeesAnOffender(t *testing.T) {
	body := func(n int) string { return "{\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n" }
	src := "package p\n\ntype T struct{}\n\n" +
		"func atLimit(a, b, c int, d, e string, f bool) " + body(maxLines) +
		"func long() " + body(maxLines+1) +
		"func (*T) wide(a, b, c, d, e, f int, g ...string) {}\n" +
		"func unnamed(int, int, int, int, int, int, int) {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range fileShape(fset, f) {
		got = append(got, fmt.Sprintf("%s %d %d", o.name, o.lines, o.params))
	}
	want := []string{"long 81 0", "T.wide 1 7", "unnamed 1 7"}
	if !slices.Equal(got, want) {
		t.Fatalf("offenders %q, want %q", got, want)
	}
}

// moduleShape parses every non-test Go file under root and returns the
// functions past the rule, and how many functions it read.
func moduleShape(t *testing.T, root string) ([]shapeOffender, int) {
	t.Helper()
	var out []shapeOffender
	funcs := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				funcs++
			}
		}
		out = append(out, fileShape(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, funcs
}

// fileShape is the file's functions past the rule, in source order.
func fileShape(fset *token.FileSet, f *ast.File) []shapeOffender {
	var out []shapeOffender
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		lines := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line + 1
		params := 0
		for _, field := range fd.Type.Params.List {
			params += max(1, len(field.Names))
		}
		if lines > maxLines || params > maxParams {
			out = append(out, shapeOffender{pos: fset.Position(fd.Pos()), name: funcName(fd), lines: lines, params: params})
		}
	}
	return out
}

// funcName is a function's name, or Type.Method for a method (the
// receiver's type without its * or type parameters).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
