{{/* Names, labels and the shared pieces of the pod specs. */}}
{{- define "dlio.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dlio.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "dlio.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "dlio.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "dlio.tokenSecret" -}}
{{- .Values.token.existingSecret | default (printf "%s-token" (include "dlio.fullname" .)) -}}
{{- end -}}

{{- define "dlio.coordinatorAddress" -}}
{{ include "dlio.fullname" . }}-coordinator:{{ .Values.coordinator.port }}
{{- end -}}

{{/* The agent pod template, shared by the StatefulSet and the DaemonSet. */}}
{{- define "dlio.agentPod" -}}
metadata:
  labels:
    {{- include "dlio.labels" . | nindent 4 }}
    app.kubernetes.io/component: agent
spec:
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: agent
      image: {{ include "dlio.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      command: ["dlio-agent"]
      args:
        - --coordinator={{ include "dlio.coordinatorAddress" . }}
        - --data-root=/data
        # Identity: the pod name is unique in the fleet; the node name makes num_hosts count Kubernetes nodes.
        - --name=$(POD_NAME)
        - --node-name=$(NODE_NAME)
        - --accelerators={{ .Values.agents.accelerators }}
        - --metrics-listen=0.0.0.0:{{ .Values.agents.metricsPort }}
        - --reconnect-window={{ .Values.agents.reconnectWindowSeconds }}
        - --log-level={{ .Values.agents.logLevel }}
        - --token-file=/etc/dlio/token/token
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
      ports:
        - name: metrics
          containerPort: {{ .Values.agents.metricsPort }}
          protocol: TCP
      readinessProbe:
        httpGet:
          path: /metrics
          port: metrics
        periodSeconds: 10
      resources:
        {{- toYaml .Values.agents.resources | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /data
        - name: token
          mountPath: /etc/dlio/token
          readOnly: true
  volumes:
    - name: data
      {{- if eq .Values.data.type "persistentVolumeClaim" }}
      persistentVolumeClaim:
        claimName: {{ required "data.claimName is required when data.type is persistentVolumeClaim" .Values.data.claimName }}
      {{- else }}
      hostPath:
        path: {{ .Values.data.hostPath }}
        type: DirectoryOrCreate
      {{- end }}
    - name: token
      secret:
        secretName: {{ include "dlio.tokenSecret" . }}
  {{- with .Values.agents.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.agents.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.agents.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
