{{/* Name of the controller's objects: <release>-controller, or tollgate-controller for release "tollgate". */}}
{{- define "tollgate.controller.fullname" -}}
{{- printf "%s-controller" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tollgate.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tollgate
{{- end -}}

{{- define "tollgate.labels" -}}
app.kubernetes.io/name: tollgate
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "tollgate.commonLabels" . }}
{{- end -}}

{{- define "tollgate.controller.selectorLabels" -}}
app.kubernetes.io/name: tollgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "tollgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tollgate.controller.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository:tag (tag defaults to the appVersion) or repository@digest. */}}
{{- define "tollgate.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .appVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The log directive: the default level, then <component>=<level> for every other component. */}}
{{- define "tollgate.logLevel" -}}
{{- $levels := .Values.controller.logLevels -}}
{{- $parts := list (default "info" $levels.default) -}}
{{- range $component, $level := $levels -}}
{{- if ne $component "default" -}}
{{- if not (has $level (list "error" "warn" "info" "debug" "trace")) -}}
{{- fail (printf "controller.logLevels.%s: %q is not a level (error, warn, info, debug, trace)" $component $level) -}}
{{- end -}}
{{- $parts = append $parts (printf "%s=%s" $component $level) -}}
{{- end -}}
{{- end -}}
{{- join "," $parts -}}
{{- end -}}
