package stratacr

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

// defaults is a defaulting function of the kind the patch path serves:
// each field filled where the Job leaves it unset, from constants.
func defaults(job *batchv1.Job) error {
	if job.Spec.ActiveDeadlineSeconds == nil {
		job.Spec.ActiveDeadlineSeconds = new(int64(600))
	}
	if job.Spec.TTLSecondsAfterFinished == nil {
		job.Spec.TTLSecondsAfterFinished = new(int32(300))
	}
	for k, v := range map[string]string{"team": "a", "tier/x~y": "b"} {
		if _, ok := job.Labels[k]; !ok {
			if job.Labels == nil {
				job.Labels = map[string]string{}
			}
			job.Labels[k] = v
		}
	}
	if job.Spec.Template.Spec.ServiceAccountName == "" {
		job.Spec.Template.Spec.ServiceAccountName = "builder"
	}
	if job.Spec.Suspend == nil {
		job.Spec.Suspend = new(true)
	}
	return nil
}

// jobs are requests as the API server sends them, and as a hostile or
// unusual writer could, each with whether the patch path answers it.
var jobs = []struct {
	raw   string
	patch bool
}{
	{`{}`, true},
	{`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"a"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x"}],"restartPolicy":"Never"}}}}`, true},
	{`{"metadata":{"name":"j","labels":{"team":"mine"}},"spec":{"activeDeadlineSeconds":30,"template":{"metadata":{"labels":{"a":"b"}},"spec":{"serviceAccountName":"own"}}}}`, true},
	{`{"metadata":{"labels":{"team":"mine","tier/x~y":"c"}},"spec":{"activeDeadlineSeconds":30,"ttlSecondsAfterFinished":5,"suspend":true,"template":{"spec":{"serviceAccountName":"own"}}}}`, true},
	{`{"metadata":{"annotations":{"x":"{\"spec\":{}}"}},"spec":{"parallelism":2}}`, true},
	{` { "metadata" : { "labels" : { "team" : "t" } } , "spec" : { "template" : { } } } `, true},
	{`{"spec":{"activeDeadlineSeconds":12,"ttlSecondsAfterFinished":1.5e1}}`, true},
	// A zero value, or null, where the plan sets a value: a typed decode
	// may read it as unset, or not (a pointer to zero).
	{`{"metadata":{"labels":{}},"spec":{}}`, false},
	{`{"metadata":{"labels":null},"spec":null}`, false},
	{`{"spec":{"activeDeadlineSeconds":0}}`, false},
	{`{"spec":{"suspend":false}}`, false},
	{`{"spec":{"template":{"spec":{"serviceAccountName":""}}}}`, false},
	// Not an object where the plan has members under it.
	{`{"spec":{"template":"nonsense"}}`, false},
	// An escaped name, and a name given twice.
	{`{"metadata":{"lab\u0065ls":{"team":"t"}}}`, false},
	{`{"spec":{"suspend":true},"spec":{}}`, false},
	// Not an object, not JSON.
	{`[]`, false},
	{`{"spec":`, false},
}

// checkPatch answers raw on the patch path and, when it can, checks the
// patched object against the typed path's; it reports whether it could.
func checkPatch(t testing.TB, p *plan, apply func(*batchv1.Job) error, raw []byte) bool {
	t.Helper()
	patch, ok := p.patch(raw)
	var want batchv1.Job
	if !ok {
		return false
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &want); err != nil {
		// Not an object of the kind: the API server, which decoded
		// it, never sends one, and the typed path would refuse it.
		return true
	}
	if err := apply(&want); err != nil {
		t.Fatal(err)
	}
	got := raw
	if patch != nil {
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("%s: the patch %s: %v", raw, patch, err)
		}
		if got, err = ops.Apply(raw); err != nil {
			t.Fatalf("%s: applying %s: %v", raw, patch, err)
		}
	}
	var job batchv1.Job
	if err := kjson.UnmarshalCaseSensitivePreserveInts(got, &job); err != nil {
		t.Fatalf("%s: the patched object %s: %v", raw, got, err)
	}
	if !reflect.DeepEqual(&job, &want) {
		w, _ := json.Marshal(&want)
		g, _ := json.Marshal(&job)
		t.Errorf("%s:\npatch %s\ngot  %s\nwant %s", raw, patch, g, w)
	}
	return true
}

// TestDefaulterPlanRefuses: an apply a patch that only adds cannot stand
// for sends every request down the typed path.
func TestDefaulterPlanRefuses(t *testing.T) {
	for name, apply := range map[string]func(*batchv1.Job) error{
		"overrides a field set": func(j *batchv1.Job) error {
			j.Spec.ActiveDeadlineSeconds = new(int64(600))
			return nil
		},
		"reads what it fills": func(j *batchv1.Job) error {
			if j.Spec.Parallelism == nil {
				j.Spec.Parallelism = new(int32(1))
			} else {
				*j.Spec.Parallelism *= 2
			}
			return nil
		},
		"sets a list": func(j *batchv1.Job) error {
			if len(j.Spec.Template.Spec.Containers) == 0 {
				j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c"}}
			}
			return nil
		},
		"fails": func(*batchv1.Job) error { return context.Canceled },
		"fills a struct when it is absent": func(j *batchv1.Job) error {
			if j.Spec.Template.Spec.SecurityContext == nil {
				j.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(1000))}
			}
			return nil
		},
		"fills a map when it is absent": func(j *batchv1.Job) error {
			if j.Labels == nil {
				j.Labels = map[string]string{"team": "a"}
			}
			return nil
		},
		// An object made empty, or holding only nulls, beside a value:
		// the object's presence is a change a patch of values drops.
		"makes an empty object": func(j *batchv1.Job) error {
			if j.Spec.Template.Spec.DNSConfig == nil {
				j.Spec.Template.Spec.DNSConfig = &corev1.PodDNSConfig{}
			}
			if j.Spec.Template.Spec.ServiceAccountName == "" {
				j.Spec.Template.Spec.ServiceAccountName = "builder"
			}
			return nil
		},
		"makes an object of nulls": func(j *batchv1.Job) error {
			if j.Spec.PodFailurePolicy == nil {
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{}
			}
			if j.Spec.Template.Spec.ServiceAccountName == "" {
				j.Spec.Template.Spec.ServiceAccountName = "builder"
			}
			return nil
		},
		// Sets nothing on an empty Job: it may set fields of list
		// elements.
		"sets fields of list elements": func(j *batchv1.Job) error {
			for i := range j.Spec.Template.Spec.Containers {
				if j.Spec.Template.Spec.Containers[i].ImagePullPolicy == "" {
					j.Spec.Template.Spec.Containers[i].ImagePullPolicy = corev1.PullIfNotPresent
				}
			}
			return nil
		},
	} {
		if p := planFor(apply); p != nil {
			t.Errorf("%s: a plan %+v; want none", name, p.root)
		}
	}
	if patch, ok := planFor(func(*batchv1.Job) error { return nil }).patch([]byte(`{"spec":{}}`)); ok {
		t.Errorf("an apply that sets nothing: answered with patch %s; want the typed path", patch)
	}
}

// FuzzDefaulterPatch: whatever the request, the patch path does not
// fail, and what it answers is what the typed path would. The answer is
// compared on the request as the API server writes it (no member given
// twice, which a JSON patch and a typed decode resolve differently).
func FuzzDefaulterPatch(f *testing.F) {
	for _, j := range jobs {
		f.Add([]byte(j.raw))
	}
	p := planFor(defaults)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<16 {
			return
		}
		p.patch(raw)
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		canonical, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		checkPatch(t, p, defaults, canonical)
	})
}

// apiJob is a Job as the API server sends it to a mutating webhook on
// create: defaulted, with its managed fields.
const apiJob = `{"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"j-1","namespace":"load-11","uid":"7d3e2b3c-6c39-4f0e-9d0a-3b1a2d8c9e11",` +
	`"creationTimestamp":"2026-11-27T10:05:58Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"batch/v1",` +
	`"time":"2026-11-27T10:05:58Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:backoffLimit":{},"f:completionMode":{},"f:template":` +
	`{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{}}},"f:dnsPolicy":{}}}}}}]},"spec":{"parallelism":1,` +
	`"completions":1,"backoffLimit":6,"manualSelector":false,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":` +
	`[{"name":"main","image":"busybox","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",` +
	`"imagePullPolicy":"Always"}],"restartPolicy":"Never","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",` +
	`"securityContext":{},"schedulerName":"default-scheduler"}},"completionMode":"NonIndexed","suspend":false,` +
	`"podReplacementPolicy":"TerminatingOrFailed"},"status":{}}`

// BenchmarkDefaulterPatch is the per-request work of the patch path on
// apiJob: the scan and the patch, with a plan that sets four fields.
func BenchmarkDefaulterPatch(b *testing.B) {
	apply := func(job *batchv1.Job) error {
		suspend := job.Spec.Suspend
		err := defaults(job)
		job.Spec.Suspend = suspend // the API server defaults it to false
		return err
	}
	p := planFor(apply)
	raw := []byte(apiJob)
	if !checkPatch(b, p, apply, raw) {
		b.Fatal("not answered on the patch path")
	}
	b.ReportAllocs()
	for b.Loop() {
		p.patch(raw)
	}
}

// TestDefaulterPlanFillsAMapWhenEmpty: an apply that fills the labels
// only when the Job has none (len == 0, the usual idiom, as well as ==
// nil) fills a whole map, not each value on its own: a Job with a label
// of its own gets nothing from it, and the plan must not answer for it.
func TestDefaulterPlanFillsAMapWhenEmpty(t *testing.T) {
	apply := func(j *batchv1.Job) error {
		if len(j.Labels) == 0 {
			j.Labels = map[string]string{"team": "a"}
		}
		return nil
	}
	if p := planFor(apply); p != nil {
		checkPatch(t, p, apply, []byte(`{"metadata":{"name":"j","labels":{"app":"x"}},"spec":{}}`))
	}
	if planFor(defaults) == nil {
		t.Error("an apply that fills each label on its own has no plan")
	}
}

// TestDefaulterPlanChangesAFieldSet: an apply that changes a field a Job
// already set, raising it to a floor or lowering it to a ceiling, cannot
// be answered by a patch that only adds: the plan must not answer for it.
func TestDefaulterPlanChangesAFieldSet(t *testing.T) {
	for name, apply := range map[string]func(*batchv1.Job) error{
		"raises to a floor": func(j *batchv1.Job) error {
			if j.Spec.ActiveDeadlineSeconds == nil || *j.Spec.ActiveDeadlineSeconds < 600 {
				j.Spec.ActiveDeadlineSeconds = new(int64(600))
			}
			return nil
		},
		"raises to a floor far below its default": func(j *batchv1.Job) error {
			switch {
			case j.Spec.ActiveDeadlineSeconds == nil:
				j.Spec.ActiveDeadlineSeconds = new(int64(600))
			case *j.Spec.ActiveDeadlineSeconds < 60:
				j.Spec.ActiveDeadlineSeconds = new(int64(60))
			}
			return nil
		},
		"lowers to a ceiling far above its default": func(j *batchv1.Job) error {
			switch {
			case j.Spec.BackoffLimit == nil:
				j.Spec.BackoffLimit = new(int32(6))
			case *j.Spec.BackoffLimit > 20:
				j.Spec.BackoffLimit = new(int32(20))
			}
			return nil
		},
		"lowers to a ceiling": func(j *batchv1.Job) error {
			if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit > 3 {
				j.Spec.BackoffLimit = new(int32(3))
			}
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			if p := planFor(apply); p != nil {
				checkPatch(t, p, apply, []byte(`{"metadata":{"name":"j"},"spec":{"activeDeadlineSeconds":30,"backoffLimit":50,"template":{"spec":{}}}}`))
			}
		})
	}
}

// TestDefaulterPlanBoundsItsChecks: a plan's checks apply the defaulting
// function to the whole object about twice per value it sets, so their
// work grows with the square of the values. A configuration that sets
// more than maxPlanValues (a tenant's hundreds of default labels) gets no
// plan: its requests take the typed path, one apply each, and making the
// plan costs one apply, not minutes of the webhook's time.
func TestDefaulterPlanBoundsItsChecks(t *testing.T) {
	for _, n := range []int{maxPlanValues, maxPlanValues + 1, 2000} {
		calls := 0
		apply := func(j *batchv1.Job) error {
			calls++
			for i := range n {
				k := fmt.Sprintf("l%05d", i)
				if _, ok := j.Labels[k]; !ok {
					if j.Labels == nil {
						j.Labels = map[string]string{}
					}
					j.Labels[k] = "v"
				}
			}
			return nil
		}
		p := planFor(apply)
		switch {
		case n <= maxPlanValues && p == nil:
			t.Errorf("%d labels: no plan; want one", n)
		case n > maxPlanValues && (p != nil || calls != 1):
			t.Errorf("%d labels: a plan %v after %d applies; want none after one", n, p != nil, calls)
		}
	}
}
