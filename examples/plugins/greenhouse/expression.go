package greenhouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"

	"github.com/stratacfg/strata/internal/yamljson"
)

// Greenhouse's labels that feed a preset's expressions.
const (
	// LabelOwnedBy names a preset's owning team: global.greenhouse.ownedBy.
	LabelOwnedBy = "greenhouse.sap/owned-by"
	// LabelMetadataPrefix prefixes a Cluster's labels that expressions
	// read as global.greenhouse.metadata.<rest>.
	LabelMetadataPrefix = "metadata.greenhouse.sap/"
)

// Settings are what a Greenhouse installation decides about the values it
// computes, which its objects do not say.
type Settings struct {
	// DNSDomain is Greenhouse's --dns-domain, which expressions read as
	// global.greenhouse.baseDomain. Empty: not known, and an expression
	// that reads it fails to evaluate.
	DNSDomain string
	// NoExpressions is Greenhouse's pluginPreset.expressionEvaluationEnabled
	// turned off: a preset value with an expression is then an error, as
	// Greenhouse's controller fails the preset.
	NoExpressions bool
	// ContestsAreErrors makes a contested option (ValueSource.Contested)
	// an error: the operator's choice that two overrides as specific as
	// each other must never disagree.
	ContestsAreErrors bool
}

// placeholder is a ${...} placeholder of an expression.
var placeholder = regexp.MustCompile(`\$\{([^}]+)\}`)

// EvaluateExpression evaluates expression, a YAML document whose ${...}
// placeholders are CEL expressions, to the JSON of the value it gives, as
// Greenhouse's PluginPreset controller does (its pkg/cel
// EvaluateExpression, on the same cel-go release): each placeholder's
// expression is evaluated with `global` bound to data's global value and
// cel-go's string extensions; its text takes the placeholder's place
// wherever the placeholder appears (a string as it is, anything else as
// JSON); then the document is read as YAML. Without placeholders, the
// document is read as it is.
//
// Unlike Greenhouse, it bounds what a tenant's expression may cost: the
// placeholders of one expression together at most maxCost of cel-go's
// units, each also charged for compiling it and for the document it is
// replaced through (a Plugin's computation bounds all its expressions
// together so), and the document they make at most maxDocument bytes.
func EvaluateExpression(expression string, data map[string]any) (json.RawMessage, error) {
	budget := maxCost
	return evaluateExpression(expression, data, &budget)
}

// evaluateExpression is EvaluateExpression taking what its placeholders
// cost from budget.
func evaluateExpression(expression string, data map[string]any, budget *uint64) (json.RawMessage, error) {
	if expression == "" {
		return nil, errors.New("the expression is empty")
	}
	found := placeholder.FindAllStringSubmatch(expression, -1)
	if len(found) == 0 {
		return yamljson.ToJSON([]byte(expression), yamljson.Limit(len(expression)))
	}
	env, err := globalEnv()
	if err != nil {
		return nil, err
	}
	doc := expression
	for _, m := range found { // each, in order, as Greenhouse: a later one replaces what an earlier value wrote
		// What cel-go does not count: compiling the placeholder, and
		// looking for it through the document and replacing it there.
		work := placeholderCost + uint64(len(doc))
		if work > *budget {
			return nil, fmt.Errorf("${%s}: the expression's placeholders cost over %d of cel-go's units, with %d for finding and replacing each in the document, %d bytes now", m[1], maxCost, placeholderCost, len(doc))
		}
		*budget -= work
		v, cost, err := evaluate(env, m[1], data, *budget)
		*budget -= min(cost, *budget)
		if err != nil {
			return nil, fmt.Errorf("${%s}: %w", m[1], err)
		}
		text, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("${%s}: its value %v has no JSON: %w", m[1], v, err)
			}
			text = string(b)
		}
		if n := strings.Count(doc, m[0]); len(doc)+n*(len(text)-len(m[0])) > maxDocument {
			return nil, fmt.Errorf("${%s}: the document the placeholders make is over %d bytes", m[1], maxDocument)
		}
		doc = strings.ReplaceAll(doc, m[0], text)
	}
	out, err := yamljson.ToJSON([]byte(doc), yamljson.Limit(len(doc)))
	if err != nil {
		return nil, fmt.Errorf("the document the placeholders make is no YAML: %w", err)
	}
	return out, nil
}

// maxCost bounds what one expression may cost, in cel-go's units (about
// one per step), all its placeholders together: far above any value an
// expression computes for a Plugin, and low enough that a hostile one
// cannot hold a computation. Greenhouse sets no bound.
var maxCost uint64 = 10_000_000 // a variable: tests lower it

// placeholderCost is what one placeholder costs beyond cel-go's count of
// its evaluation, with a unit for each byte of the document it is looked
// for in and replaced through: compiling it into a program costs about as
// much as a thousand steps. A literal placeholder costs cel-go nothing.
const placeholderCost = 1000

// maxDocument bounds the document an expression's placeholders make.
const maxDocument = 1 << 20

// The CEL environments, built once: an expression's (`global`, with the
// string extensions) and a reference's (`object`).
var (
	globalEnv = sync.OnceValues(func() (*cel.Env, error) {
		return cel.NewEnv(cel.Variable("global", cel.DynType), ext.Strings())
	})
	objectEnv = sync.OnceValues(func() (*cel.Env, error) {
		return cel.NewEnv(cel.Variable("object", cel.DynType))
	})
)

// evaluate compiles and evaluates one CEL expression in env over vars,
// at a cost of at most budget, and returns its value and what it cost.
func evaluate(env *cel.Env, expression string, vars map[string]any, budget uint64) (any, uint64, error) {
	ast, iss := env.Compile(expression)
	if iss != nil && iss.Err() != nil {
		return nil, 0, iss.Err()
	}
	prg, err := env.Program(ast, cel.CostLimit(budget), cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return nil, 0, err
	}
	out, details, err := prg.Eval(vars)
	var cost uint64
	if details != nil && details.ActualCost() != nil {
		cost = *details.ActualCost()
	}
	if err != nil {
		return nil, cost, err
	}
	v, err := native(out)
	return v, cost, err
}

// native is a CEL value as Go holds JSON: lists and maps (with string
// keys) element by element, anything else as cel-go gives it.
func native(v ref.Val) (any, error) {
	if types.IsError(v) {
		return nil, fmt.Errorf("%v", v)
	}
	switch x := v.Value().(type) {
	case []ref.Val:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := native(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[ref.Val]ref.Val:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key, err := native(k)
			if err != nil {
				return nil, err
			}
			s, ok := key.(string)
			if !ok {
				return nil, fmt.Errorf("a map key %v is not a string", key)
			}
			if out[s], err = native(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v.Value(), nil
}

// EvaluateObject evaluates a CEL expression with `object` bound to obj,
// as Greenhouse's pkg/cel Evaluate does for one object, taking what it
// costs from budget, which it may not pass.
func EvaluateObject(expression string, obj map[string]any, budget *uint64) (any, error) {
	if expression == "" {
		return nil, errors.New("the expression is empty")
	}
	env, err := objectEnv()
	if err != nil {
		return nil, err
	}
	v, cost, err := evaluate(env, expression, map[string]any{"object": obj}, *budget)
	*budget -= min(cost, *budget)
	return v, err
}

// TemplateData is what a preset's expressions read for the Plugin it
// makes on cluster, as Greenhouse's GetGreenhouseValues and
// BuildTemplateData give it for the preset's temporary Plugin:
// global.greenhouse.organizationName (the namespace), clusterName,
// metadata.<key> for each of the cluster's labels metadata.greenhouse.sap/<key>,
// baseDomain (s.DNSDomain, when known) and ownedBy (the preset's
// greenhouse.sap/owned-by label, when set). Dotted names nest, as Helm's
// strvals reads them.
func TemplateData(namespace string, presetLabels map[string]string, cluster *Cluster, s Settings) map[string]any {
	flat := map[string]any{"organizationName": namespace}
	if cluster != nil {
		flat["clusterName"] = cluster.Name
		for k, v := range cluster.Labels {
			if key, ok := strings.CutPrefix(k, LabelMetadataPrefix); ok && key != "" {
				flat["metadata."+key] = v
			}
		}
	}
	if s.DNSDomain != "" {
		flat["baseDomain"] = s.DNSDomain
	}
	if owner := presetLabels[LabelOwnedBy]; owner != "" {
		flat["ownedBy"] = owner
	}
	greenhouse := map[string]any{}
	// In name order, so that a label that is a prefix of another
	// ("region", "region.zone") always gives way the same: the value
	// nested under it.
	for _, name := range slices.Sorted(maps.Keys(flat)) {
		setAt(greenhouse, flat[name], strings.Split(name, ".")...)
	}
	return map[string]any{"global": map[string]any{"greenhouse": greenhouse}}
}
