# Multi-stage: compile TypeScript once, install production dependencies only, run the compiled JavaScript
# as a numeric non-root user. The runtime image starts with a read-only root filesystem: the only place it
# writes is /tmp (an emptyDir in the Helm chart, a tmpfs with `docker run --read-only --tmpfs /tmp`).

FROM node:20-alpine AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:20-alpine AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-alpine
WORKDIR /app
# The incident report's chart is drawn in DejaVu Sans (resvg reads system fonts; alpine ships none).
RUN apk add --no-cache font-dejavu
# HOME and TMPDIR point at the one writable place; nothing at runtime needs more (no compile cache, no npm).
ENV NODE_ENV=production HOME=/tmp TMPDIR=/tmp
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /src/dist ./dist
COPY bin ./bin
COPY runbooks ./runbooks
COPY rollcall.example.yaml ./
# Numeric, so Kubernetes can verify runAsNonRoot without resolving a user name (the chart sets the same ids).
USER 10001:10001
EXPOSE 3000 8080
ENTRYPOINT ["node", "dist/main.js"]
CMD ["start", "--config", "/etc/rollcall/rollcall.yaml"]
