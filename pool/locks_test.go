package pool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every mutex of the package appears in the lock order of the package
// documentation (as "type.field"), and every …Locked function's doc names
// the lock it needs ("Needs <lock>" or "with <lock> held"), one of those.
func TestLockOrderIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	order := regexp.MustCompile(`(?m)^//  \d+\. (\w+\.mu)\b`).FindAllStringSubmatch(string(doc), -1)
	listed := map[string]bool{}
	for _, m := range order {
		listed[m[1]] = true
	}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				checkMutexes(t, d, listed)
			case *ast.FuncDecl:
				if !strings.HasSuffix(d.Name.Name, "Locked") {
					continue
				}
				text := strings.Join(strings.Fields(d.Doc.Text()), " ")
				named := false
				for lock := range listed {
					named = named || strings.Contains(text, "Needs "+lock) || strings.Contains(text, "with "+lock+" held")
				}
				if !named {
					t.Errorf("%s: %s's doc names none of the documented locks: %q", file, d.Name.Name, text)
				}
			}
		}
	}
	if len(listed) < 6 {
		t.Errorf("the lock order lists %d locks: %v", len(listed), listed)
	}
}

// checkMutexes reports every sync.Mutex field of d's struct types that
// the lock order does not list as "type.field".
func checkMutexes(t *testing.T, d *ast.GenDecl, listed map[string]bool) {
	t.Helper()
	for _, spec := range d.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, field := range st.Fields.List {
			sel, ok := field.Type.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Mutex" && sel.Sel.Name != "RWMutex") {
				continue
			}
			for _, name := range field.Names {
				if lock := ts.Name.Name + "." + name.Name; !listed[lock] {
					t.Errorf("%s is not in the package documentation's lock order", lock)
				}
			}
		}
	}
}
