# The service image: Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
USER node
ENTRYPOINT ["node", "bin/timetable-sync.js"]
CMD ["start"]
