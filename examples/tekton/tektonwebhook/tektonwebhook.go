// Package tektonwebhook is Tekton's defaulting webhook built as Tekton's
// cmd/webhook builds it (knative's resourcesemantics/defaulting over
// Tekton's own types, its context from Tekton's own config store), with
// the lines a Tekton maintainer adds so that each request is defaulted
// with its namespace's configuration (TEP-0085), each marked "strata".
// Tekton's SetDefaults run unmodified: they read config.FromContextOrDefaults
// as they always do.
package tektonwebhook

import (
	"context"
	"time"

	defaultconfig "github.com/tektoncd/pipeline/pkg/apis/config"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/system"
	"knative.dev/pkg/webhook/resourcesemantics"
	"knative.dev/pkg/webhook/resourcesemantics/defaulting"

	"github.com/stratacfg/strata/examples/tekton/tektonconfig"
	"github.com/stratacfg/strata/integrations/strataknative"
)

// Types are the kinds of Tekton's types map whose defaults read the
// configuration, in v1: its runs and their specs. Tekton's own map holds
// their deprecated v1beta1 forms too, whose defaults read it the same
// way.
var Types = map[schema.GroupVersionKind]resourcesemantics.GenericCRD{
	v1.SchemeGroupVersion.WithKind("Task"):        &v1.Task{},
	v1.SchemeGroupVersion.WithKind("Pipeline"):    &v1.Pipeline{},
	v1.SchemeGroupVersion.WithKind("TaskRun"):     &v1.TaskRun{},
	v1.SchemeGroupVersion.WithKind("PipelineRun"): &v1.PipelineRun{},
}

// NewDefaultingAdmissionController is Tekton's
// newDefaultingAdmissionController (cmd/webhook/main.go, v1.15.0) with
// seven lines added and two changed, each marked, and startResolver
// beside it: the controller constructor sharedmain calls with the watcher
// of Tekton's namespace.
func NewDefaultingAdmissionController(name string) func(context.Context, configmap.Watcher) *controller.Impl {
	return func(ctx context.Context, cmw configmap.Watcher) *controller.Impl {
		// Decorate contexts with the current state of the config.
		store := defaultconfig.NewStore(logging.FromContext(ctx).Named("config-store"))
		store.WatchConfigs(cmw)
		r, err := strataknative.New(kubeclient.Get(ctx), cmw, tektonconfig.Options(system.Namespace())) // strata
		if err != nil {                                                                                 // strata
			logging.FromContext(ctx).Fatalw("Building the configuration resolver", "error", err) // strata
		} // strata
		go startResolver(ctx, r)                       // strata
		impl := defaulting.NewAdmissionController(ctx, // strata: was return
			// Name of the resource webhook.
			name,
			// The path on which to serve the webhook.
			"/defaulting",
			// The resources to validate and default.
			Types,
			// A function that infuses the context passed to
			// Validate/SetDefaults with custom metadata: the store's,
			// then the namespace's.
			strataknative.WrapContext(store.ToContext, tektonconfig.ToContext), // strata: was store.ToContext
			// Whether to disallow unknown fields.
			true,
		)
		impl.Reconciler = strataknative.Admission(r, impl.Reconciler) // strata
		return impl                                                   // strata
	}
}

// startResolver starts r, which waits until sharedmain has started the
// watcher; until it has, a request is refused, saying why. A start that
// fails (an invalid cluster ConfigMap, which the operator fixes) is
// logged and tried again after a pause that doubles up to a minute.
func startResolver(ctx context.Context, r *strataknative.Resolver[*tektonconfig.Config]) {
	for pause := time.Second; ; pause = min(2*pause, time.Minute) {
		err := r.Start(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		logging.FromContext(ctx).Errorw("Starting the configuration resolver; trying again", "error", err, "after", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}
