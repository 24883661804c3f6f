{{- define "rollcall.fullname" -}}
{{- .Values.fullnameOverride | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels a selector may use: they never change for the life of a release. */}}
{{- define "rollcall.selectorLabels" -}}
app.kubernetes.io/name: rollcall
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rollcall.labels" -}}
{{ include "rollcall.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "rollcall.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "rollcall.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "rollcall.fullname" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{/* The role bot pods run: "bot", or "all" when they do the workers' work too (roles: combined). */}}
{{- define "rollcall.botRole" -}}
{{- if eq .Values.roles "split" -}}
bot
{{- else if eq .Values.roles "combined" -}}
all
{{- else -}}
{{ fail (printf "roles must be split or combined (got %s)" (toString .Values.roles)) }}
{{- end -}}
{{- end -}}

{{/*
One Deployment per kind of pod, from (dict "root" $ "component" "bot|worker" "role" "bot|worker|all" "spec"
.Values.<component>): the component names the pods (selectors, Services), the role is what `rollcall start`
runs. Every role reads the same config and Secrets: a bot previews runs (reads Argo CD and clusters), a worker
executes them.
*/}}
{{- define "rollcall.deployment" -}}
{{- $root := .root -}}
{{- $component := .component -}}
{{- $role := .role -}}
{{- $spec := .spec -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "rollcall.fullname" $root }}-{{ $component }}
  labels:
    {{- include "rollcall.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $component }}
spec:
  replicas: {{ $spec.replicas }}
  selector:
    matchLabels:
      {{- include "rollcall.selectorLabels" $root | nindent 6 }}
      app.kubernetes.io/component: {{ $component }}
  template:
    metadata:
      labels:
        {{- include "rollcall.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ $component }}
      annotations:
        checksum/config: {{ toYaml $root.Values.config | sha256sum }}
        checksum/runbooks: {{ toYaml $root.Values.runbooks | sha256sum }}
    spec:
      serviceAccountName: {{ include "rollcall.serviceAccountName" $root }}
      # The API token is mounted only for in-cluster Kubernetes access (sealed-secrets runbooks).
      automountServiceAccountToken: {{ $root.Values.kube.inCluster.enabled }}
      # Longer than config.shutdown.grace: rollcall finishes in-flight steps, then exits on its own.
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $spec.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $spec.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: rollcall
          image: {{ include "rollcall.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          {{- with $spec.nodeFlags }}
          # The image's entry point with node's flags for this role in front (values: <role>.nodeFlags).
          command:
            - node
            {{- range . }}
            - {{ . | quote }}
            {{- end }}
            - dist/main.js
          {{- end }}
          args: ["start", "--role", {{ $role | quote }}, "--config", "/etc/rollcall/rollcall.yaml"]
          env:
            - name: REDIS_URL
              valueFrom:
                secretKeyRef:
                  name: {{ $root.Values.redis.existingSecret | default $root.Values.existingSecret }}
                  key: {{ $root.Values.redis.secretKey }}
            {{- if $root.Values.runbooks }}
            - name: ROLLCALL_RUNBOOKS_DIR
              value: /etc/rollcall-runbooks
            {{- end }}
            {{- with $spec.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          envFrom:
            - secretRef:
                name: {{ $root.Values.existingSecret }}
          ports:
            - name: http
              containerPort: {{ $root.Values.config.http.port }}
            {{- if eq $component "bot" }}
            {{- with $root.Values.config.slack }}
            - name: slack
              containerPort: {{ .port | default 3000 }}
            {{- end }}
            {{- end }}
          # Alive = the process answers; ready = Redis answers (and, for a bot, Slack is connected).
          # An Argo CD instance being down never makes a pod unready: /status and /metrics report it.
          startupProbe:
            httpGet: { path: /healthz, port: http }
            periodSeconds: 2
            failureThreshold: 90
          livenessProbe:
            httpGet: { path: /healthz, port: http }
            periodSeconds: 20
            timeoutSeconds: 5
            failureThreshold: 3
          readinessProbe:
            httpGet: { path: /readyz, port: http }
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 3
          resources:
            {{- toYaml $spec.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/rollcall
              readOnly: true
            # The one writable place of a read-only root filesystem (HOME and TMPDIR point here).
            - name: tmp
              mountPath: /tmp
            {{- if $root.Values.runbooks }}
            - name: runbooks
              mountPath: /etc/rollcall-runbooks
              readOnly: true
            {{- end }}
            {{- range $root.Values.kube.kubeconfigSecrets }}
            - name: kubeconfig-{{ .cluster }}
              mountPath: /var/run/rollcall/kube/{{ .cluster }}
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ include "rollcall.fullname" $root }}-config
        - name: tmp
          emptyDir:
            sizeLimit: {{ $root.Values.tmpSizeLimit }}
        {{- if $root.Values.runbooks }}
        - name: runbooks
          configMap:
            name: {{ include "rollcall.fullname" $root }}-runbooks
        {{- end }}
        {{- range $root.Values.kube.kubeconfigSecrets }}
        - name: kubeconfig-{{ .cluster }}
          secret:
            secretName: {{ .secretName }}
            items:
              - key: {{ .key | default "kubeconfig" }}
                path: kubeconfig
        {{- end }}
{{- end -}}
