FROM node:20-alpine
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY src ./src
COPY runbooks ./runbooks
USER node
EXPOSE 3000 8080
ENTRYPOINT ["node", "bin/rollcall.js"]
CMD ["start"]
