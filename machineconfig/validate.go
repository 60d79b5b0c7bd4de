package machineconfig

import (
	"reflect"
	"sync"

	ignutil "github.com/coreos/ignition/v2/config/util"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
)

// fastValid answers what
//
//	!validate.ValidateWithContext(cfg, nil).IsFatal()
//
// answers (Ignition's config/validate: vcontext's walk calling each value's
// Validate method, then ValidateDups on each struct), for cfg a pointer to
// an Ignition types.Config. The checks are Ignition's own — the same
// Validate, Key, IgnoreDuplicates and MergedKeys methods — but the walk
// reads the structure of each type once instead of at every value, calls
// the methods through pointers instead of boxing each struct, skips subtrees
// that hold nothing to check, builds no report paths and stops at the first
// fatal entry. That is most of the cost of parsing a rendered config.
//
// ok is false when the walk cannot be sure (a kind vcontext treats
// specially, a list whose elements have no key): the caller then runs
// Ignition's validation.
func fastValid(cfg any) (valid, ok bool) {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false, false
	}
	v = v.Elem()
	return walk(v, infoOf(v.Type()))
}

var (
	validatorType = reflect.TypeFor[interface {
		Validate(path.ContextPath) report.Report
	}]()
	keyedType       = reflect.TypeFor[ignutil.Keyed]()
	ignoresDupsType = reflect.TypeFor[ignutil.IgnoresDups]()
	mergesKeysType  = reflect.TypeFor[ignutil.MergesKeys]()
	jsonContext     = path.ContextPath{Tag: "json"}
)

// typeInfo is what the walk needs of one type.
type typeInfo struct {
	kind        reflect.Kind
	validates   bool // the type (not its pointer) has Validate(path.ContextPath)
	keyed       bool // a string, or the type has Key() (what util.CallKey needs)
	unsupported bool // interfaces: vcontext makes them concrete; leave them to it
	check       bool // anything to do at or below this type
	fields      []fieldInfo
	dups        []dupGroup
	elem        *typeInfo // slice and pointer
}

type fieldInfo struct {
	index []int // through embedded structs, which vcontext flattens
	info  *typeInfo
}

// dupGroup is one duplicate list of ValidateDups: the slice fields whose
// elements' keys must be unique together (MergedKeys joins fields).
type dupGroup struct {
	fields []fieldInfo
}

var typeInfos sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := buildInfo(t, map[reflect.Type]*typeInfo{})
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

func buildInfo(t reflect.Type, seen map[reflect.Type]*typeInfo) *typeInfo {
	if ti, ok := seen[t]; ok {
		return ti
	}
	ti := &typeInfo{kind: t.Kind()}
	seen[t] = ti
	// vcontext's DefaultValidator: value receivers only, never a pointer.
	ti.validates = t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(validatorType)
	ti.keyed = t.Kind() == reflect.String || t.Implements(keyedType)
	switch t.Kind() {
	case reflect.Interface:
		ti.unsupported = true
	case reflect.Struct:
		for _, f := range structFields(t, nil) {
			fi := fieldInfo{index: f.index, info: buildInfo(f.typ, seen)}
			ti.fields = append(ti.fields, fi)
		}
		ti.dups = dupGroups(t, ti.fields)
	case reflect.Slice, reflect.Pointer:
		ti.elem = buildInfo(t.Elem(), seen)
	}
	ti.check = ti.validates || ti.unsupported || len(ti.dups) > 0
	for _, f := range ti.fields {
		ti.check = ti.check || f.info.check || f.info.unsupported
	}
	if ti.elem != nil {
		ti.check = ti.check || ti.elem.check
	}
	return ti
}

type structField struct {
	name  string
	index []int
	typ   reflect.Type
}

// structFields lists t's fields as vcontext's GetFields does: embedded
// structs flattened (an embedded pointer gives nothing).
func structFields(t reflect.Type, prefix []int) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		if !f.Anonymous {
			out = append(out, structField{f.Name, index, f.Type})
		} else if f.Type.Kind() == reflect.Struct {
			out = append(out, structFields(f.Type, index)...)
		} else if f.Type.Kind() == reflect.Interface {
			// GetFields would make it concrete: leave that to vcontext.
			out = append(out, structField{f.Name, index, f.Type})
		}
	}
	return out
}

// dupGroups is ValidateDups's grouping of t's slice fields. The methods it
// reads return constant maps in Ignition, so they are read once per type.
func dupGroups(t reflect.Type, fields []fieldInfo) []dupGroup {
	zero := reflect.Zero(t)
	ignore := map[string]struct{}{}
	if t.Implements(ignoresDupsType) {
		ignore = zero.Interface().(ignutil.IgnoresDups).IgnoreDuplicates()
	}
	merged := map[string]string{}
	if t.Implements(mergesKeysType) {
		merged = zero.Interface().(ignutil.MergesKeys).MergedKeys()
	}
	var groups []dupGroup
	byName := map[string]int{}
	for _, sf := range structFields(t, nil) {
		if sf.typ.Kind() != reflect.Slice {
			continue
		}
		if _, ok := ignore[sf.name]; ok {
			continue
		}
		name := sf.name
		if m, ok := merged[name]; ok {
			name = m
		}
		var fi fieldInfo
		for _, f := range fields {
			if slicesEqual(f.index, sf.index) {
				fi = f
			}
		}
		g, ok := byName[name]
		if !ok {
			g = len(groups)
			byName[name] = g
			groups = append(groups, dupGroup{})
		}
		groups[g].fields = append(groups[g].fields, fi)
	}
	return groups
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// walk checks v, which is addressable.
func walk(v reflect.Value, ti *typeInfo) (valid, ok bool) {
	if !ti.check {
		return true, true
	}
	if ti.unsupported {
		if ti.kind == reflect.Interface && v.IsNil() {
			return true, true
		}
		return false, false
	}
	if ti.validates && v.Addr().Interface().(interface {
		Validate(path.ContextPath) report.Report
	}).Validate(jsonContext).IsFatal() {
		return false, true
	}
	switch ti.kind {
	case reflect.Struct:
		for _, g := range ti.dups {
			if valid, ok := uniqueKeys(v, g); !valid || !ok {
				return valid, ok
			}
		}
		for _, f := range ti.fields {
			if valid, ok := walk(v.FieldByIndex(f.index), f.info); !valid || !ok {
				return valid, ok
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if valid, ok := walk(v.Index(i), ti.elem); !valid || !ok {
				return valid, ok
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return walk(v.Elem(), ti.elem)
		}
	}
	return true, true
}

// uniqueKeys is ValidateDups for one group of a struct's slice fields.
func uniqueKeys(v reflect.Value, g dupGroup) (valid, ok bool) {
	n := 0
	for _, f := range g.fields {
		n += v.FieldByIndex(f.index).Len()
	}
	if n < 2 {
		return true, true
	}
	keys := make([]string, 0, n)
	for _, f := range g.fields {
		s := v.FieldByIndex(f.index)
		if s.Len() > 0 && !f.info.elem.keyed {
			return false, false // util.CallKey would panic: Ignition's call
		}
		for i := range s.Len() {
			e := s.Index(i)
			if e.Kind() == reflect.String {
				keys = append(keys, e.String())
			} else {
				keys = append(keys, e.Addr().Interface().(ignutil.Keyed).Key())
			}
		}
	}
	if n <= 16 {
		for i := range keys {
			for j := range i {
				if keys[i] == keys[j] {
					return false, true
				}
			}
		}
		return true, true
	}
	seen := make(map[string]struct{}, n)
	for _, k := range keys {
		if _, dup := seen[k]; dup {
			return false, true
		}
		seen[k] = struct{}{}
	}
	return true, true
}
