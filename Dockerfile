# flowgate: authorization sidecar for MLflow. Node's current LTS line; better-sqlite3 is compiled
# in the build stage so the runtime image carries no compiler.
# BASE_IMAGE: any Debian bookworm image with Node 24 and npm in /usr/local and a `node` user, for
# where Docker Hub is out of reach (the tests build one with debootstrap: test/helpers/docker.ts).
ARG BASE_IMAGE=node:24-bookworm-slim
FROM ${BASE_IMAGE} AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY ui ./ui
RUN npm run build && npm prune --omit=dev

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    FLOWGATE_DB_PATH=/var/lib/flowgate/flowgate.db
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY openapi ./openapi
RUN mkdir -p /var/lib/flowgate && chown node:node /var/lib/flowgate
USER node
VOLUME ["/var/lib/flowgate"]
EXPOSE 8080 9090
# The same Node flags as npm start and the bench (package.json flowgate.nodeFlags); why: docs/performance.md, "Node flags".
ENTRYPOINT ["node", "--max-semi-space-size=8", "--no-allocation-site-pretenuring", "--no-memory-reducer", "--max-valid-polymorphic-map-count=16", "--single-threaded-gc", "dist/cli.js"]
CMD ["serve"]
