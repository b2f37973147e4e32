package lockdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// entry is a lock order's line: "//  N. owner.field".
var entry = regexp.MustCompile(`(?m)^//  \d+\. (\w+\.\w+)\b`)

// Check reads the lock order in dir's doc.go (one "//  N. owner.field"
// line per lock) and the non-test Go files of dir, and returns what
// disagrees: a sync.Mutex or sync.RWMutex the order does not list (a field
// of a struct type, "Type.field", or of a package variable's struct,
// "var.field"; embedded, "owner.Mutex"), a function named …Locked whose doc
// names no listed lock ("Needs L" or "with L held"), or fewer than min
// locks listed. The error is for files that cannot be read or parsed.
func Check(dir string, min int) ([]string, error) {
	doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, m := range entry.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var problems []string
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			problems = append(problems, checkDecl(filepath.Base(file), d, listed)...)
		}
	}
	if len(listed) < min {
		problems = append(problems, fmt.Sprintf("the lock order lists %d locks, fewer than %d: %v", len(listed), min, listed))
	}
	return problems, nil
}

// checkDecl returns d's mutexes the order does not list, or, for a
// …Locked function, its doc naming none of them.
func checkDecl(file string, d ast.Decl, listed map[string]bool) []string {
	var problems []string
	switch d := d.(type) {
	case *ast.GenDecl:
		for owner, st := range structsOf(d) {
			for _, lock := range mutexes(owner, st) {
				if !listed[lock] {
					problems = append(problems, fmt.Sprintf("%s: %s is not in the package documentation's lock order", file, lock))
				}
			}
		}
	case *ast.FuncDecl:
		if !strings.HasSuffix(d.Name.Name, "Locked") {
			break
		}
		text := strings.Join(strings.Fields(d.Doc.Text()), " ")
		for lock := range listed {
			if strings.Contains(text, "Needs "+lock) || strings.Contains(text, "with "+lock+" held") {
				return nil
			}
		}
		problems = append(problems, fmt.Sprintf("%s: %s's doc names none of the documented locks: %q", file, d.Name.Name, text))
	}
	return problems
}

// structsOf returns the struct types d declares, by type name, and the
// struct literals of the variables it declares, by variable name.
func structsOf(d *ast.GenDecl) map[string]*ast.StructType {
	out := map[string]*ast.StructType{}
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if st, ok := s.Type.(*ast.StructType); ok {
				out[s.Name.Name] = st
			}
		case *ast.ValueSpec:
			for i, v := range s.Values {
				if lit, ok := v.(*ast.CompositeLit); ok && i < len(s.Names) {
					if st, ok := lit.Type.(*ast.StructType); ok {
						out[s.Names[i].Name] = st
					}
				}
			}
		}
	}
	return out
}

// mutexes returns st's sync.Mutex and sync.RWMutex fields as
// "owner.field", an embedded one as "owner.Mutex" or "owner.RWMutex".
func mutexes(owner string, st *ast.StructType) []string {
	var out []string
	for _, field := range st.Fields.List {
		sel, ok := field.Type.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Mutex" && sel.Sel.Name != "RWMutex") {
			continue
		}
		if len(field.Names) == 0 {
			out = append(out, owner+"."+sel.Sel.Name)
		}
		for _, name := range field.Names {
			out = append(out, owner+"."+name.Name)
		}
	}
	return out
}
