package greenhouse

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stratacfg/strata/target"
)

// labelSelector turns a Kubernetes label selector into the target
// package's, checked as the API server checks one.
func labelSelector(s *metav1.LabelSelector) (*target.LabelSelector, error) {
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return nil, err
	}
	out := &target.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		var op target.Operator
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			op = target.In
		case metav1.LabelSelectorOpNotIn:
			op = target.NotIn
		case metav1.LabelSelectorOpExists:
			op = target.Exists
		case metav1.LabelSelectorOpDoesNotExist:
			op = target.DoesNotExist
		default:
			return nil, fmt.Errorf("%q is no operator", r.Operator)
		}
		out.MatchExpressions = append(out.MatchExpressions, target.Requirement{Key: r.Key, Operator: op, Values: r.Values})
	}
	return out, nil
}

func labelsOf(m map[string]string) labels.Set { return labels.Set(m) }
