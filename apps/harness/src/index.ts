export * from './results/model.js';
